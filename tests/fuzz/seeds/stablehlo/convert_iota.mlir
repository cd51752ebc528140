module @jit_convert_iota attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x4xf32>) -> (tensor<2x4xi32> {jax.result_info = "result[0]"}, tensor<2x4xf32> {jax.result_info = "result[1]"}) {
    %cst = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %cst_0 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x4xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<2x4xf32>
    %2 = stablehlo.convert %1 : (tensor<2x4xf32>) -> tensor<2x4xi32>
    %3 = stablehlo.iota dim = 0 : tensor<4xi32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [1] : (tensor<4xi32>) -> tensor<1x4xi32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0, 1] : (tensor<1x4xi32>) -> tensor<2x4xi32>
    %6 = stablehlo.add %2, %5 : tensor<2x4xi32>
    %7 = stablehlo.iota dim = 0 : tensor<4xf32>
    %8 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %9 = stablehlo.divide %7, %8 : tensor<4xf32>
    %10 = stablehlo.floor %9 : tensor<4xf32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0, 1] : (tensor<1x4xf32>) -> tensor<2x4xf32>
    %13 = stablehlo.multiply %12, %arg0 : tensor<2x4xf32>
    return %6, %13 : tensor<2x4xi32>, tensor<2x4xf32>
  }
}
