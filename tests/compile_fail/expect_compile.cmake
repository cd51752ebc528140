# Compiles SOURCE with COMPILER (-fsyntax-only) and checks the outcome.
#   cmake -DCOMPILER=c++ -DSOURCE=f.cpp -DINCLUDE=dir [-DFLAGS="-DX -march=native"]
#         [-DEXPECT_ERROR=regex] -P expect_compile.cmake
# Without EXPECT_ERROR the source must compile; with it, compiling must fail
# with a static assertion and an error text matching the regex.
separate_arguments(flags UNIX_COMMAND "${FLAGS}")
execute_process(
  COMMAND ${COMPILER} -std=c++20 -fsyntax-only -I${INCLUDE} ${flags} ${SOURCE}
  RESULT_VARIABLE status
  ERROR_VARIABLE errors)
if(NOT DEFINED EXPECT_ERROR)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "expected ${SOURCE} to compile with '${FLAGS}', it did not:\n${errors}")
  endif()
  return()
endif()
if(status EQUAL 0)
  message(FATAL_ERROR "expected ${SOURCE} to fail to compile with '${FLAGS}', it compiled")
endif()
if(NOT errors MATCHES "static assertion failed")
  message(FATAL_ERROR "expected a static assertion, got:\n${errors}")
endif()
if(NOT errors MATCHES "${EXPECT_ERROR}")
  message(FATAL_ERROR "the error does not match '${EXPECT_ERROR}':\n${errors}")
endif()
message(STATUS "failed to compile as expected, naming ${EXPECT_ERROR}")
