"""detect: layered detection of the GPU stack (silicon → driver → runtime → compiler), AMD first, NVIDIA too."""
