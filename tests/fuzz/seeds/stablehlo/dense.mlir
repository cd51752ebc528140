module @jit_dense attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x4xf32>) -> (tensor<2x2xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<[[-5.000000e-02, 3.800000e-01, 1.650000e+00], [-1.740000e+00, 1.480000e+00, 6.400000e-01], [-7.000000e-02, -1.240000e+00, -5.300000e-01], [-9.800000e-01, -1.020000e+00, -1.800000e-01]]> : tensor<4x3xf32>
    %cst_0 = stablehlo.constant dense<[0.76999998, -1.440000e+00, -1.910000e+00]> : tensor<3xf32>
    %cst_1 = stablehlo.constant dense<[[-0.959999978, -0.889999985], [-6.000000e-01, -1.700000e-01], [1.260000e+00, 0.000000e+00]]> : tensor<3x2xf32>
    %0 = stablehlo.dot_general %arg0, %cst, contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [1] : (tensor<3xf32>) -> tensor<1x3xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<2x3xf32>
    %3 = stablehlo.add %0, %2 : tensor<2x3xf32>
    %4 = call @relu(%3) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %5 = stablehlo.dot_general %4, %cst_1, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
    return %5 : tensor<2x2xf32>
  }
  func.func private @relu(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<2x3xf32>
    return %1 : tensor<2x3xf32>
  }
}
