"""Models as the sync workers see them: per-layer gradient sizes and backward times.

One module per duty, each importing only those above it in this list:
- `layers`: the data model, `Model` (a tuple of `Layer(name, numel, backward_s)` in
  forward order) and `scaled` (time dilation); no torch, job.json carries `to_list()`;
- `networks`: the networks in plain torch.nn (LeNet-5, VGG-19 and ResNet-18 for BML,
  ResNet-20, VGG-16 (CIFAR) and the PTB LSTM for MG-WFBP and gTop-k) and torchvision's;
- `registry`: the names a spec may use (`NETWORKS`, `torchvision:NAME`), their input and
  default batch, `resolve`, `valid_specs`, and the error of a wrong spec;
- `profiles`: backward times: the profiler, the shipped profiles in workloads/profiles/
  (package data) and the cache of live ones; `main` is `python -m workloads.models
  profile NAME...`, which writes shipped profiles; what a layer is (module or tensor);
- `specs`: `load(spec)`, a spec string (`synthetic,mb=4`, `resnet50,batch=32`) to a Model.

Real training of these networks on scikit-learn's digits is workloads/training.py.
Import from the module that defines a name (`from workloads.models.specs import load`);
this package re-exports nothing, so `layers` stays importable without torch.
"""
