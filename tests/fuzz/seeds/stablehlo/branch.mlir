module @jit_branch attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32> {jax.result_info = "result[0]"}, tensor<3xf32> {jax.result_info = "result[1]"}) {
    %c = stablehlo.constant dense<2> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %c_1 = stablehlo.constant dense<1> : tensor<i32>
    %0 = "stablehlo.case"(%c_1) ({
      %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3xf32>
      %4 = stablehlo.subtract %arg0, %3 : tensor<3xf32>
      stablehlo.return %4 : tensor<3xf32>
    }, {
      %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3xf32>
      %4 = stablehlo.add %arg0, %3 : tensor<3xf32>
      stablehlo.return %4 : tensor<3xf32>
    }) : (tensor<i32>) -> tensor<3xf32>
    %1 = stablehlo.clamp %c_0, %c_1, %c : tensor<i32>
    %2 = "stablehlo.case"(%1) ({
      %3 = stablehlo.sine %arg0 : tensor<3xf32>
      stablehlo.return %3 : tensor<3xf32>
    }, {
      %3 = stablehlo.cosine %arg0 : tensor<3xf32>
      stablehlo.return %3 : tensor<3xf32>
    }, {
      %3 = stablehlo.exponential %arg0 : tensor<3xf32>
      stablehlo.return %3 : tensor<3xf32>
    }) : (tensor<i32>) -> tensor<3xf32>
    return %0, %2 : tensor<3xf32>, tensor<3xf32>
  }
}
