"""Units of a gradient on the wire, defined once for every layer (no torch here)."""

DTYPE_BYTES = 4  # float32 gradients everywhere: dense, sparse values, merged buckets
INDEX_BYTES = 4  # int32 element indices of the sparse (top-k) messages
