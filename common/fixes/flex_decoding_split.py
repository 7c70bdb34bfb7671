"""Record flex-decoding-split-from-device: flex decoding sizes its split from torch.cuda's SM count on every device
(torch >= 2.9); on 2.7/2.8 its probe finds upstream without the query and it reports "not needed"."""

from __future__ import annotations

from npu_inductor_compat.common import torch_npu_names
from npu_inductor_compat.common.flex import CUDA_QUERY_CHANGES, FLEX_PACKAGE, asking_the_device, decoding_asks_cuda
from npu_inductor_compat.patching import Change, Patch

DECODING_SPLIT_FROM_DEVICE = Patch(
    id="flex-decoding-split-from-device",
    proven_by=(
        "tests/common/fixes/test_flex_decoding_split.py::test_without_its_record_flex_decoding_asks_cuda_and_fails",
    ),
    layer="fix",
    why=(
        "flex decoding (short queries) sizes its split from torch.cuda's SM count for every device: lowering it "
        "for an NPU fails where there is no CUDA"
    ),
    upstream="torch >= 2.9 kernel/flex/flex_decoding.py get_split_k",
    remove_when="upstream asks the device's own interface for the SM count",
    # flex_attention imported create_flex_decoding_kernel by name: that is the name its lowering looks up; so did
    # torch_npu 2.9.0.post9's own flex lowering (its kernel/flex_attention.py)
    changes=(
        Change(f"{FLEX_PACKAGE}.flex_attention:create_flex_decoding_kernel", asking_the_device),
        Change(torch_npu_names.qualname("flex-decoding-kernel"), asking_the_device, optional=True),
        *CUDA_QUERY_CHANGES,
    ),
    upstream_has_fix=lambda: not decoding_asks_cuda(),
)

FIXES: tuple[Patch, ...] = (DECODING_SPLIT_FROM_DEVICE,)
