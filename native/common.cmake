# What both extensions' builds share (included by native/CMakeLists.txt and native/cuda's): C++20,
# position-independent code, Release by default, Python's development module, nanobind 3 (mlx's),
# and MLX_ROOT, the installed mlx package (include/, lib/, share/; given on the command line only
# to check a build where that mlx can't be imported).
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()

find_package(Python 3.11 COMPONENTS Interpreter Development.Module REQUIRED)
execute_process(
  COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
  OUTPUT_STRIP_TRAILING_WHITESPACE OUTPUT_VARIABLE nanobind_ROOT)
find_package(nanobind 3 CONFIG REQUIRED)
if(NOT MLX_ROOT)
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -m mlx --cmake-dir
    OUTPUT_STRIP_TRAILING_WHITESPACE OUTPUT_VARIABLE MLX_ROOT)
endif()
