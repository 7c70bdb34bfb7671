"""The torch_npu-wheel provider: torch_npu's released Python behind a stand-in, its stubs, records, pairs."""
