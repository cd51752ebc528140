module @jit_layout attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x4xf32>) -> (tensor<2x2x3xf32> {jax.result_info = "result[0]"}, tensor<2x6xf32> {jax.result_info = "result[1]"}) {
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %0 = stablehlo.reshape %arg0 : (tensor<3x4xf32>) -> tensor<2x3x2xf32>
    %1 = stablehlo.transpose %0, dims = [2, 0, 1] : (tensor<2x3x2xf32>) -> tensor<2x2x3xf32>
    %2 = stablehlo.slice %arg0 [0:1, 0:4] : (tensor<3x4xf32>) -> tensor<1x4xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0, 1] : (tensor<1x4xf32>) -> tensor<3x4xf32>
    %4 = stablehlo.slice %arg0 [0:3, 2:4] : (tensor<3x4xf32>) -> tensor<3x2xf32>
    %5 = stablehlo.slice %arg0 [0:3, 0:2] : (tensor<3x4xf32>) -> tensor<3x2xf32>
    %6 = stablehlo.concatenate %4, %5, dim = 1 : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x4xf32>
    %7 = stablehlo.add %3, %6 : tensor<3x4xf32>
    %8 = call @_pad(%7, %cst) : (tensor<3x4xf32>, tensor<f32>) -> tensor<4x6xf32>
    %9 = stablehlo.slice %8 [0:4:2, 0:6] : (tensor<4x6xf32>) -> tensor<2x6xf32>
    return %1, %9 : tensor<2x2x3xf32>, tensor<2x6xf32>
  }
  func.func private @_pad(%arg0: tensor<3x4xf32>, %arg1: tensor<f32>) -> tensor<4x6xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.pad %arg0, %0, low = [1, 0], high = [0, 2], interior = [0, 0] : (tensor<3x4xf32>, tensor<f32>) -> tensor<4x6xf32>
    return %1 : tensor<4x6xf32>
  }
}
