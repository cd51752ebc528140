module @jit_conv attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1x1x4x4xf32>) -> (tensor<1x2x4x4xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<[[[[5.000000e-02, -3.000000e-02], [5.300000e-01, 1.140000e+00]]], [[[1.100000e+00, 6.500000e-01], [-1.180000e+00, 6.400000e-01]]]]> : tensor<2x1x2x2xf32>
    %0 = stablehlo.convolution(%arg0, %cst) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {pad = [[1, 0], [0, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<2x1x2x2xf32>) -> tensor<1x2x4x4xf32>
    %1 = stablehlo.tanh %0 : tensor<1x2x4x4xf32>
    return %1 : tensor<1x2x4x4xf32>
  }
}
