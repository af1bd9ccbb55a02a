"""Writes tests/metriclogs/*.log and their .yaml sidecars: for each numeric fingerprint, a short
series in each real line format below (firing, and a healthy run that must not fire). Run it again
after changing a format: python tests/metriclogs/make.py"""
import math, yaml
from pathlib import Path
OUT = Path(__file__).resolve().parent

def rising(n=12, base=1.0):  # grad norm / memory that climbs
    return [round(base * 1.35 ** k, 3) for k in range(n)]
def wobble(n=14, base=1.0):  # healthy: up and down
    return [round(base * (1 + 0.1 * ((-1) ** k) * (k % 3)), 3) for k in range(n)]
def halving(lo=1):  # 65536 down to lo
    v, out = 65536.0, []
    while v >= lo:
        out.append(v); v /= 2
    return out
def healthy_scale():  # DeepSpeed-style start at 2**32, settles at 65536
    return [2.0 ** k for k in range(32, 15, -1)] + [65536.0] * 4 + [131072.0]

F = {}
# --- grad_norm rising
F["grad_norm"] = ("exploding-gradients", [
 ("megatron", "Megatron-LM megatron/training/training.py training_log (` grad norm: {:.3f} |`)",
  " iteration {i:>8}/  300000 | consumed samples: {s:>12} | elapsed time per iteration (ms): 812.4 | learning rate: 1.499E-05 | global batch size:   512 | lm loss: 4.131107E+00 | loss scale: 65536.0 | grad norm: {v} | number of skipped iterations:   0 | number of nan iterations:   0 |"),
 ("hf-trainer", "huggingface/transformers src/transformers/trainer.py _maybe_log_save_evaluate (logs['grad_norm'])",
  "{{'loss': 2.4312, 'grad_norm': {v}, 'learning_rate': 1.8e-05, 'epoch': {e}}}"),
 ("hf-trainer-strings", "huggingface/transformers trainer log dict with quoted values, as in the example line of entries/numerics/exploding-gradients.yaml",
  "{{'loss': '2.4312', 'grad_norm': '{v}', 'learning_rate': '1.8e-05', 'epoch': '{e}'}}"),
 ("mmengine", "open-mmlab/mmengine mmengine/runner/log_processor.py (`grad_norm: ` from OptimWrapper clip_grad)",
  "2024/05/01 12:00:{ss} - mmengine - INFO - Epoch(train)  [1][{i:>4}/2000]  lr: 1.0000e-03  eta: 3:12:03  time: 0.4415  data_time: 0.0123  memory: 10482  grad_norm: {v}  loss: 0.8121"),
 ("fairseq-json", "facebookresearch/fairseq fairseq/logging/progress_bar.py JsonProgressBar (gnorm)",
  "2021-03-08 12:34:{ss} | INFO | train_inner | {{\"epoch\": 1, \"update\": 0.0, \"loss\": \"9.61\", \"nll_loss\": \"8.83\", \"ppl\": \"455.1\", \"wps\": \"1520.3\", \"lr\": \"4e-05\", \"gnorm\": \"{v}\", \"loss_scale\": \"4\", \"num_updates\": \"{i}\"}}"),
 ("fairseq-simple", "facebookresearch/fairseq fairseq/logging/progress_bar.py SimpleProgressBar (`key=value, `)",
  "2021-03-08 12:34:{ss} | INFO | train_inner | epoch 001:    {i} / 1000 loss=9.61, nll_loss=8.83, ppl=455.1, wps=1520.3, ups=0.41, wpb=3676.4, bsz=128, num_updates={i}, lr=4e-05, gnorm={v}, loss_scale=4, train_wall=57, wall=161"),
 ("tqdm-postfix", "Lightning / tqdm progress bar postfix (`key=value`, lightning/pytorch/callbacks/progress/tqdm_progress.py)",
  "Epoch 0:  {pct}%|██        | {i}/1000 [00:10<00:40, 4.81it/s, loss=2.31, grad_norm={v}, v_num=1]"),
 ("plain-print", "custom training loop print(f'step {step} loss {loss:.4f} grad_norm {norm:.4f}')",
  "step {i} loss 2.3100 grad_norm {v}"),
 ("jsonl-wandb", "JSON lines / wandb-style history rows ({\"train/grad_norm\": ...})",
  "{{\"_step\": {i}, \"train/loss\": 2.31, \"train/grad_norm\": {v}, \"train/learning_rate\": 1.8e-05}}"),
])
F["memory_allocated"] = ("memory-leak-accumulated-graph", [
 ("custom-gib", "custom print of torch.cuda.memory_allocated() (issue thread in entries/memory/memory-leak-accumulated-graph.yaml)",
  "[Epoch 2/150][Batch {i}/4829] BatchTime = 0.540 (s) Losses = ['18.1938'] | cuda mem allocated {v} GiB  max 9.67 GiB"),
 ("deepspeed-see-memory", "microsoft/DeepSpeed deepspeed/runtime/utils.py see_memory_usage (`MA {} GB         Max_MA`)",
  "[2024-03-02 10:11:{ss},345] [INFO] [utils.py:803:see_memory_usage] MA {v} GB         Max_MA 30.1 GB         CA 31.0 GB         Max_CA 31 GB"),
 ("mmengine", "open-mmlab/mmengine mmengine/runner/log_processor.py (`memory: ` = max_memory_allocated in MB)",
  "2024/05/01 12:00:{ss} - mmengine - INFO - Epoch(train)  [1][{i:>4}/2000]  lr: 1.0000e-03  eta: 1:02:03  time: 0.4415  data_time: 0.0123  memory: {vi}  loss: 0.8121"),
 ("detectron2", "facebookresearch/detectron2 detectron2/utils/events.py CommonMetricPrinter (`max_mem: {}M`)",
  "[05/01 12:00:{ss} d2.utils.events]:  eta: 1:02:03  iter: {i}  total_loss: 0.9931  loss_cls: 0.2403  time: 0.4412  data_time: 0.0123  lr: 0.02  max_mem: {vi}M"),
 ("plain-print", "custom print(f'step {step} loss {loss:.3f} memory_allocated() {gb:.2f} GB')",
  "step {i} loss 2.318 memory_allocated() {v} GB"),
 ("jsonl", "JSON lines metrics ({\"memory_allocated\": MiB})",
  "{{\"step\": {i}, \"loss\": 2.318, \"memory_allocated\": {vi}}}"),
 ("tqdm-postfix", "tqdm postfix set_postfix(mem_allocated=f'{gb:.2f}G')",
  "train:  {pct}%|██        | {i}/1000 [00:10<00:40, 4.81it/s, loss=2.31, mem_allocated={v}G]"),
])
F["data_time"] = ("dataloader-bottleneck", [
 ("torchvision", "pytorch/vision references/classification/utils.py MetricLogger (`Time  {} ({})\\tData  {} ({})`; reference train.py prints `Epoch: [0]`)",
  "Epoch: [0][{i:>4}/5005]\tTime  {w} ({w})\tData  {p} ({p})\tLoss 6.8491e+00 (6.8545e+00)\tAcc@1    1.13 ( 0.25)\tAcc@5    3.91 ( 1.02)"),
 ("timm", "huggingface/pytorch-image-models train.py train_one_epoch (`Time: {:.3f}s, ... LR: {:.3e}  Data: {:.3f} ({:.3f})`)",
  "Train: 0 [{i:>4}/1251 (  4%)]  Loss: 6.912 (6.92)  Time: {w}s,  273.80/s  ({w}s,  258.88/s)  LR: 1.000e-05  Data: {p} ({p})"),
 ("mmengine", "open-mmlab/mmengine mmengine/runner/log_processor.py (`time: ... data_time: ...`)",
  "2024/05/01 12:00:{ss} - mmengine - INFO - Epoch(train)  [1][{i:>4}/2000]  lr: 1.0000e-03  eta: 3:12:03  time: {w}  data_time: {p}  memory: 10482  loss: 0.8121"),
 ("detectron2", "facebookresearch/detectron2 detectron2/utils/events.py CommonMetricPrinter (`time: {:.4f}  data_time: {:.4f}`)",
  "[05/01 12:00:{ss} d2.utils.events]:  eta: 1:02:03  iter: {i}  total_loss: 0.9931  loss_cls: 0.2403  time: {w}  data_time: {p}  lr: 0.02  max_mem: 2865M"),
 ("plain-print", "custom print(f'step {step} | step_time {t:.3f}s | data_time {d:.3f}s')",
  "step {i} | loss 2.31 | step_time {w}s | data_time {p}s"),
 ("jsonl", "JSON lines metrics ({\"train/step_time\": s, \"train/data_time\": s})",
  "{{\"_step\": {i}, \"train/loss\": 2.31, \"train/step_time\": {w}, \"train/data_time\": {p}}}"),
])
F["loss_scale"] = ("loss-scale-collapse", [
 ("deepspeed", "microsoft/DeepSpeed deepspeed/runtime/fp16/loss_scaler.py update_scale (`[deepspeed] OVERFLOW! Rank {} Skipping step. Attempted loss scale: {}, reducing to {}`)",
  "[2023-06-07 22:16:{ss},018] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {prev}, reducing to {v}"),
 ("apex", "NVIDIA/apex apex/amp/scaler.py update_scale (`Gradient overflow.  Skipping step, loss scaler {} reducing loss scale to {}`)",
  "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to {v}"),
 ("megatron", "NVIDIA/Megatron-LM megatron/training/training.py training_log (` loss scale: {:.1f} |`)",
  " iteration {i:>8}/  159576 | consumed samples: {s:>12} | elapsed time per iteration (ms): 18706.1 | learning rate: 6.000E-05 | global batch size:    96 | lm loss: 6.444662E+00 | loss scale: {v} | number of skipped iterations:   1 | number of nan iterations:   0 |"),
 ("fairseq-note", "facebookresearch/fairseq fairseq/optim/dynamic_loss_scaler.py + trainer.py (`NOTE: gradient overflow detected, ignoring gradient, setting loss scale to: {}`)",
  "2021-03-08 12:33:{ss} | INFO | fairseq.trainer | NOTE: gradient overflow detected, ignoring gradient, setting loss scale to: {v}"),
 ("fairseq-json", "facebookresearch/fairseq fairseq/logging/progress_bar.py JsonProgressBar (`\"loss_scale\": \"4\"`)",
  "2021-03-08 12:34:{ss} | INFO | train_inner | {{\"epoch\": 1, \"update\": 0.0, \"loss\": \"9.61\", \"gnorm\": \"19.777\", \"loss_scale\": \"{v}\", \"num_updates\": \"{i}\"}}"),
 ("plain-print", "custom print(f'step {step} loss {loss:.4f} loss_scale {scaler.get_scale()}') with torch.cuda.amp.GradScaler",
  "step {i} loss 2.3100 loss_scale {v}"),
])
F["loss"] = ("nan-loss-fp16-overflow", [
 ("hf-trainer", "huggingface/transformers src/transformers/trainer.py log dict; fp16=True in TrainingArguments",
  "{{'loss': {v}, 'grad_norm': 3.1, 'learning_rate': 2.0e-05, 'epoch': {e}}}"),
 ("hf-trainer-strings", "huggingface/transformers trainer logs printed as strings",
  "{{'loss': '{v}', 'grad_norm': '3.1', 'learning_rate': '2e-05', 'epoch': '{e}'}}"),
 ("lightning-postfix", "Lightning lightning/pytorch/callbacks/progress/tqdm_progress.py postfix (`loss=..., v_num=...`)",
  "Epoch 0:  {pct}%|████      | {i}/1000 [01:10<01:37,  5.95it/s, loss={v}, v_num=3]"),
 ("mmengine", "open-mmlab/mmengine mmengine/runner/log_processor.py (`loss: nan`)",
  "2024/05/01 12:00:{ss} - mmengine - INFO - Epoch(train)  [1][{i:>4}/2000]  lr: 1.0000e-03  eta: 3:12:03  time: 0.4415  data_time: 0.0123  memory: 10482  loss: {v}"),
 ("torchvision", "pytorch/vision references/classification/utils.py MetricLogger (`Loss {} ({})`)",
  "Epoch: [0][{i:>4}/5005]\tTime  0.512 (0.530)\tData  0.010 (0.012)\tLoss {v} ({v})\tAcc@1    1.13 ( 0.25)"),
 ("plain-print", "custom print(f'step {step} loss {loss.item()}')",
  "step {i} loss {v}"),
 ("jsonl-wandb", "JSON lines (json.dumps writes NaN)",
  "{{\"_step\": {i}, \"train/loss\": {v}}}"),
])
NEAR = {  # the fp16 context each nan-loss log shows, as the real tool prints it
 "hf-trainer": "training_args: TrainingArguments(output_dir=out, fp16=True, learning_rate=2e-05)",
 "hf-trainer-strings": "training_args: TrainingArguments(output_dir=out, fp16=True, learning_rate=2e-05)",
 "lightning-postfix": "Using 16bit Automatic Mixed Precision (AMP)",
 "mmengine": "fp16 = dict(loss_scale=512.0)",
 "torchvision": "Namespace(amp=True, batch_size=32, data_path='/data/imagenet', fp16=True, lr=0.5)",
 "plain-print": "scaler = torch.cuda.amp.GradScaler() enabled (fp16)",
 "jsonl-wandb": "config: {\"fp16\": true, \"lr\": 0.0003}",
}

def render(tpl, i, v, prev=None):
    vi = int(v) if isinstance(v, float) and v == v and v not in (math.inf,) else v
    return tpl.format(i=i * 10, s=i * 5120, v=v, vi=vi, e=round(i * 0.01, 2), ss=f"{i % 60:02d}", pct=i % 100, prev=prev)

def fmt_nan(name):
    return {"hf-trainer": "nan", "hf-trainer-strings": "nan", "lightning-postfix": "nan", "mmengine": "nan", "torchvision": "nan",
            "plain-print": "nan", "jsonl-wandb": "NaN"}[name]

for metric, (slug, formats) in F.items():
    for name, source, tpl in formats:
        for kind in ("fires", "healthy"):
            lines = []
            if metric == "grad_norm":
                vals = rising() if kind == "fires" else wobble()
                lines = [render(tpl, k + 1, v) for k, v in enumerate(vals)]
            elif metric == "memory_allocated":
                if "{vi}" in tpl:
                    vals = [10482 + 380 * k for k in range(12)] if kind == "fires" else [10482 + (k % 3) * 12 for k in range(14)]
                    vals = [float(v) for v in vals]
                else:
                    vals = [round(8.27 + 0.31 * k, 2) for k in range(12)] if kind == "fires" else [round(8.27 + 0.01 * (k % 3), 2) for k in range(14)]
                lines = [render(tpl, k + 1, v) for k, v in enumerate(vals)]
            elif metric == "data_time":
                pairs = [(1.0 + 0.01 * k, 0.8 + 0.01 * k) for k in range(7)] if kind == "fires" else [(0.5 + 0.01 * k, 0.01 + 0.001 * k) for k in range(10)]
                lines = [render(tpl.replace("{w}", f"{w:.3f}").replace("{p}", f"{p:.3f}"), k + 1, 0) for k, (w, p) in enumerate(pairs)]
            elif metric == "loss_scale":
                vals = halving(0.5) if kind == "fires" else healthy_scale()
                if name == "deepspeed" and kind == "healthy":
                    vals = [2.0 ** k for k in range(32, 15, -1)]
                prevs = [v * 2 for v in vals]
                lines = [render(tpl, k + 1, (int(v) if name in ("deepspeed",) and v >= 1 else v), int(p) if name == "deepspeed" and p >= 1 else p) for k, (v, p) in enumerate(zip(vals, prevs))]
            elif metric == "loss":
                vals = [round(2.9 - 0.05 * k, 4) for k in range(8)]
                if kind == "fires":
                    vals = vals + [fmt_nan(name)] * 3
                lines = [NEAR[name]] + [render(tpl, k + 1, v) for k, v in enumerate(vals)]
            base = f"{metric}--{name}--{kind}"
            (OUT / f"{base}.log").write_text("\n".join(lines) + "\n")
            meta = {"metric": metric, "format": name, "source": source, "fires": kind == "fires", "expect": slug if kind == "fires" else None}
            (OUT / f"{base}.yaml").write_text(yaml.safe_dump(meta, sort_keys=False, allow_unicode=True))
print(len(list(OUT.glob("*.log"))))
