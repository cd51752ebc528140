module @jit_sort_top_k attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x5xf32>) -> (tensor<2x2xf32> {jax.result_info = "result[0]"}, tensor<2x2xi32> {jax.result_info = "result[1]"}, tensor<2x5xf32> {jax.result_info = "result[2]"}) {
    %0:2 = stablehlo.composite "chlo.top_k" %arg0 {composite_attributes = {k = 2 : i64}, decomposition = @chlo.top_k.impl, version = 1 : i32} : (tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>)
    %1 = stablehlo.negate %arg0 : tensor<2x5xf32>
    %2 = call @sort(%1) : (tensor<2x5xf32>) -> tensor<2x5xf32>
    %3 = stablehlo.negate %2 : tensor<2x5xf32>
    return %0#0, %0#1, %3 : tensor<2x2xf32>, tensor<2x2xi32>, tensor<2x5xf32>
  }
  func.func private @chlo.top_k.impl(%arg0: tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>) {
    %0 = stablehlo.iota dim = 1 : tensor<2x5xi32>
    %1:2 = "stablehlo.sort"(%arg0, %0) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>, %arg3: tensor<i32>, %arg4: tensor<i32>):
      %4 = stablehlo.compare GT, %arg1, %arg2, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %4 : tensor<i1>
    }) : (tensor<2x5xf32>, tensor<2x5xi32>) -> (tensor<2x5xf32>, tensor<2x5xi32>)
    %2 = stablehlo.slice %1#0 [0:2, 0:2] : (tensor<2x5xf32>) -> tensor<2x2xf32>
    %3 = stablehlo.slice %1#1 [0:2, 0:2] : (tensor<2x5xi32>) -> tensor<2x2xi32>
    return %2, %3 : tensor<2x2xf32>, tensor<2x2xi32>
  }
  func.func private @sort(%arg0: tensor<2x5xf32>) -> tensor<2x5xf32> {
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = "stablehlo.sort"(%arg0) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %1 = stablehlo.compare EQ, %arg1, %cst_0, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %2 = stablehlo.select %1, %cst_0, %arg1 : tensor<i1>, tensor<f32>
      %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %4 = stablehlo.select %3, %cst, %2 : tensor<i1>, tensor<f32>
      %5 = stablehlo.compare EQ, %arg2, %cst_0, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %6 = stablehlo.select %5, %cst_0, %arg2 : tensor<i1>, tensor<f32>
      %7 = stablehlo.compare NE, %arg2, %arg2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %8 = stablehlo.select %7, %cst, %6 : tensor<i1>, tensor<f32>
      %9 = stablehlo.compare LT, %4, %8, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %9 : tensor<i1>
    }) : (tensor<2x5xf32>) -> tensor<2x5xf32>
    return %0 : tensor<2x5xf32>
  }
}
