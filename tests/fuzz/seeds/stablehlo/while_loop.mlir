module @jit_while_loop attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x2xf32>) -> (tensor<2x2xf32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %c_0 = stablehlo.constant dense<3> : tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %0:3 = stablehlo.while(%iterArg = %c_1, %iterArg_2 = %c_1, %iterArg_3 = %arg0) : tensor<i32>, tensor<i32>, tensor<2x2xf32>
    cond {
      %1 = stablehlo.compare LT, %iterArg, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1:2 = func.call @closed_call(%iterArg_2, %iterArg_3) : (tensor<i32>, tensor<2x2xf32>) -> (tensor<i32>, tensor<2x2xf32>)
      %2 = stablehlo.add %iterArg, %c : tensor<i32>
      stablehlo.return %2, %1#0, %1#1 : tensor<i32>, tensor<i32>, tensor<2x2xf32>
    }
    return %0#2 : tensor<2x2xf32>
  }
  func.func private @closed_call(%arg0: tensor<i32>, %arg1: tensor<2x2xf32>) -> (tensor<i32>, tensor<2x2xf32>) {
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg0, %c : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %2 = stablehlo.multiply %arg1, %1 : tensor<2x2xf32>
    %3 = stablehlo.convert %arg0 : (tensor<i32>) -> tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %5 = stablehlo.add %2, %4 : tensor<2x2xf32>
    return %0, %5 : tensor<i32>, tensor<2x2xf32>
  }
}
