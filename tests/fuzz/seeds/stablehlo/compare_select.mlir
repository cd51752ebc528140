module @jit_compare_select attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3xf32>) -> (tensor<2x3xf32> {jax.result_info = "result[0]"}, tensor<2x3xi32> {jax.result_info = "result[1]"}) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %c_0 = stablehlo.constant dense<-1> : tensor<i32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.compare GT, %arg0, %arg1, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %2 = stablehlo.compare NE, %arg0, %1, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %3 = stablehlo.and %0, %2 : tensor<2x3xi1>
    %4 = call @clip(%arg1, %c_0, %c) : (tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
    %5 = call @_where(%3, %arg0, %4) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %6 = stablehlo.compare EQ, %arg0, %arg1, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %7 = stablehlo.convert %6 : (tensor<2x3xi1>) -> tensor<2x3xi32>
    return %5, %7 : tensor<2x3xf32>, tensor<2x3xi32>
  }
  func.func private @clip(%arg0: tensor<2x3xf32>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<2x3xf32> {
    %0 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %2 = stablehlo.maximum %1, %arg0 : tensor<2x3xf32>
    %3 = stablehlo.convert %arg2 : (tensor<i32>) -> tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %5 = stablehlo.minimum %4, %2 : tensor<2x3xf32>
    return %5 : tensor<2x3xf32>
  }
  func.func private @_where(%arg0: tensor<2x3xi1>, %arg1: tensor<2x3xf32>, %arg2: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<2x3xi1>, tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
}
