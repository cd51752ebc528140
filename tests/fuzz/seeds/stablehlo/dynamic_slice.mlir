module @jit_dynamic_slice attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x3xf32>) -> (tensor<2x3xf32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<2> : tensor<i32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %c_1 = stablehlo.constant dense<1> : tensor<i32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %c_1, %c_2, sizes = [2, 3] : (tensor<3x3xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %2 = stablehlo.multiply %0, %1 : tensor<2x3xf32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x3xf32>
    %4 = stablehlo.dynamic_update_slice %arg0, %3, %c, %c_2 : (tensor<3x3xf32>, tensor<1x3xf32>, tensor<i32>, tensor<i32>) -> tensor<3x3xf32>
    %5 = stablehlo.slice %4 [0:2, 0:3] : (tensor<3x3xf32>) -> tensor<2x3xf32>
    %6 = stablehlo.add %2, %5 : tensor<2x3xf32>
    return %6 : tensor<2x3xf32>
  }
}
