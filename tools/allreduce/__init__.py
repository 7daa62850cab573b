"""allreduce_int6: an all-reduce whose payload is 6-bit integers under a shared per-block scale."""
