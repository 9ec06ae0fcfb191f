//! The framework an input comes from, so that advice about memory that
//! grows (steady growth, values kept until logged, buffers that outlive the
//! step) names that framework's own API: `.item()` and
//! `zero_grad(set_to_none=True)` mean nothing to a JAX user, and
//! `torch_xla.sync()` is what a PyTorch/XLA user is missing, not
//! `jax.block_until_ready`.

use oomscope_report::{OomKind, Report, StepSeries};

/// Whose program the evidence comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framework {
    PyTorch,
    /// PyTorch on XLA devices (TPU): lazy tensors cut into graphs by
    /// `torch_xla.sync()` / `xm.mark_step()`.
    PyTorchXla,
    Jax,
    /// Nothing says (a CSV, a bare allocator profile): the advice names
    /// each framework's way.
    Unknown,
}

impl Framework {
    /// The framework of a step series: the reader that produced it (a
    /// torchtitan log is PyTorch's, maxtext's JAX's), what a printed stats
    /// dict measures, a device named `xla:N` (PyTorch/XLA's), else the
    /// rest of the report.
    pub fn of_series(s: &StepSeries, report: &Report) -> Framework {
        match s.source.as_str() {
            "torchtitan" | "pytorch" | "torchtune" => Framework::PyTorch,
            "maxtext" | "tpu-info" => Framework::Jax,
            // JAX's `device.memory_stats()` keys; PyTorch/XLA's
            // `xm.get_memory_info()` prints `bytes_used` (older: `kb_free`).
            "memory_stats" if matches!(s.metric.as_str(), "bytes_in_use" | "peak_bytes_in_use") => {
                Framework::Jax
            }
            "memory_stats" => Framework::PyTorchXla,
            _ if s.device.starts_with("xla:") => Framework::PyTorchXla,
            _ => Framework::of_report(report),
        }
    }

    /// The framework the report's inputs show, strongest evidence first:
    /// a PyTorch/XLA error or graph (`SyncTensorsGraph.N` is the name
    /// PyTorch/XLA gives its compiled graphs); a PyTorch CUDA error,
    /// snapshot or memory timeline; a JAX device memory profile or a
    /// module JAX named (`jit_…`, `pjit_…`).
    pub fn of_report(report: &Report) -> Framework {
        let torch_xla = report.oom_events.iter().any(|e| e.kind == OomKind::TorchXla)
            || report
                .modules
                .iter()
                .any(|m| m.name.starts_with("SyncTensorsGraph"));
        if torch_xla {
            return Framework::PyTorchXla;
        }
        let torch = report.oom_events.iter().any(|e| e.kind == OomKind::TorchCuda)
            || !report.memory_snapshots.is_empty()
            || !report.memory_timelines.is_empty();
        if torch {
            return Framework::PyTorch;
        }
        let jax = !report.device_memory_profiles.is_empty()
            || !report.device_memory_series.is_empty()
            || report
                .modules
                .iter()
                .any(|m| m.name.starts_with("jit_") || m.name.starts_with("pjit_"));
        if jax {
            return Framework::Jax;
        }
        Framework::Unknown
    }

    /// How to move a reduced value to the host, in the framework's API.
    pub fn to_host(self) -> &'static str {
        match self {
            Framework::PyTorch => "In PyTorch: call .item() (or .cpu()) on the reduced loss or metric right after the step.",
            Framework::PyTorchXla => "In PyTorch/XLA: call .item() (or .cpu()) on the reduced loss or metric after torch_xla.sync() (xm.mark_step()), or log it with xm.add_step_closure, so that no XLA tensor is kept until the next log.",
            Framework::Jax => "In JAX: fetch the reduced value with jax.device_get(x) (or float(x)) right after the step, and do not keep jax.Array results in a Python list across steps.",
            Framework::Unknown => "PyTorch: .item() or .cpu() on the reduced value; PyTorch/XLA: the same after torch_xla.sync(); JAX: jax.device_get(x) or float(x).",
        }
    }

    /// Steady growth: what keeps device memory from one step to the next.
    pub fn no_persistent_tensors(self) -> &'static str {
        match self {
            Framework::PyTorch => "Do not keep tensors that persist across iterations: a list of losses or outputs, tensors stored on the model, a cache that grows (a loss kept without .item() or .detach() keeps its whole autograd graph). torch.cuda.memory._record_memory_history() and a snapshot show which stack keeps allocating.",
            Framework::PyTorchXla => "Do not keep XLA tensors that persist across iterations (a list of losses or metrics, tensors stored on the model): each keeps its device buffer alive after torch_xla.sync(). torch_xla.debug.metrics.metrics_report() shows the live tensor count growing.",
            Framework::Jax => "Do not keep jax.Array results that persist across steps (a Python list of losses or metrics, arrays held by closures or caches): each keeps its device buffer. len(jax.live_arrays()) printed every few steps shows whether arrays accumulate.",
            Framework::Unknown => "Do not keep device tensors or arrays that persist across iterations (lists of losses or metrics, growing caches); release intermediates you no longer need.",
        }
    }

    /// Steady growth: the per-step call that returns what a step left.
    pub fn sync(self) -> &'static str {
        match self {
            Framework::PyTorch => "Free what each step leaves: optimizer.zero_grad(set_to_none=True), and no reference to the step's outputs or loss past the step (memory PyTorch keeps reserved is reused, not leaked; what grows is memory still allocated).",
            Framework::PyTorchXla => "Cut the graph every step with torch_xla.sync() (xm.mark_step() before PyTorch/XLA 2.4; MpDeviceLoader does it per batch): without it the lazy graph, and the buffers it holds, grow step after step.",
            Framework::Jax => "Donate the training state to the step (jax.jit(step, donate_argnums=…)) so the old state's buffers are freed as the new ones are written, and block on each step's result (jax.block_until_ready) so dispatch does not run ahead holding buffers.",
            Framework::Unknown => "Synchronise each step so freed buffers are returned (PyTorch/XLA: torch_xla.sync() or xm.mark_step(); JAX: jax.block_until_ready, and donate the train state; PyTorch: optimizer.zero_grad(set_to_none=True)).",
        }
    }

    /// Lingering backward buffers: what keeps gradient-sized arrays alive.
    pub fn release_backward(self) -> &'static str {
        match self {
            Framework::PyTorch => "Find what keeps these backward-pass buffers after the step (an in-place custom autograd Function returning its input, a list holding gradients or graph outputs) and release it; free gradients with optimizer.zero_grad(set_to_none=True).",
            Framework::PyTorchXla => "Make sharding annotations out of place (clone in forward and backward, as an in-place MarkShardingFunction kept Mixtral's gradients alive) or use xs.mark_sharding, so gradient arrays are not kept alive; free gradients with optimizer.zero_grad(set_to_none=True).",
            Framework::Jax => "Return from the step only what the next step needs: gradients or activations among the jitted function's outputs stay on the device as long as the caller holds them; donate the parameters and optimizer state (donate_argnums) so the updated copies reuse their memory.",
            Framework::Unknown => "Find what keeps these backward-pass buffers after the step and release it (PyTorch: optimizer.zero_grad(set_to_none=True), no in-place autograd Function returning its input; PyTorch/XLA: out-of-place sharding annotations or xs.mark_sharding; JAX: return only what the next step needs, and donate the state).",
        }
    }

    /// The framework in words, for a reason's "worded for" note.
    pub fn name(self) -> &'static str {
        match self {
            Framework::PyTorch => "PyTorch",
            Framework::PyTorchXla => "PyTorch/XLA",
            Framework::Jax => "JAX",
            Framework::Unknown => "an unknown framework",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(source: &str, metric: &str, device: &str) -> StepSeries {
        StepSeries {
            source: source.into(),
            metric: metric.into(),
            device: device.into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_series_says_its_framework_by_reader_stats_keys_or_device() {
        let r = Report::default();
        let of = |s: StepSeries| Framework::of_series(&s, &r);
        assert_eq!(of(series("torchtune", "peak_memory_active", "rank 0")), Framework::PyTorch);
        assert_eq!(of(series("maxtext", "bytes_in_use", "TPU_0")), Framework::Jax);
        assert_eq!(of(series("memory_stats", "bytes_in_use", "TPU_0")), Framework::Jax);
        assert_eq!(of(series("memory_stats", "bytes_used", "rank 2")), Framework::PyTorchXla);
        assert_eq!(of(series("memory_stats", "used", "xla:1")), Framework::PyTorchXla);
        assert_eq!(of(series("csv", "bytes", "xla:0")), Framework::PyTorchXla);
        assert_eq!(of(series("csv", "bytes", "gpu 0")), Framework::Unknown);
    }
}
