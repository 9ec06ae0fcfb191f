//! XLA shapes and layouts: parse shape strings, compute padded and unpadded sizes exactly as the TPU compiler does.
