"""The torch_npu wheel survey: released wheels read (never imported) for our fixes and the names we hook."""
