//! Find and parse every OOM error in a text log (TPU, XLA GPU, PyTorch CUDA, PyTorch/XLA).
