// The job editor's field table: one entry per job JSON field (schema:
// core/job/job.h, docs/job-format.md), written in JSON-Schema vocabulary
// (type, enum, minimum, default, description). The editor renders every
// entry, reads the form back into a job JSON and places engine errors by
// `path`. Adding a core option to the app is one entry here.
export interface FieldSchema {
  path: string;                 // job JSON path: "parallel.tp"
  title: string;                // label
  // 'requests': serving.requests, a request mix edited as text, one class a
  // line (editor.ts parseRequests / formatRequests).
  type: 'integer' | 'number' | 'boolean' | 'string' | 'requests';
  enum?: string[];              // a <select>
  minimum?: number;
  maximum?: number;
  step?: number;
  default?: number | string | boolean;  // shown as placeholder; left out of the job when empty
  description: string;          // tooltip / help text (what it teaches)
  group: 'model' | 'parallel' | 'training' | 'serving' | 'hardware';
  advanced?: boolean;           // folded under "more options"
  // Only in this mode (docs/inference.md): the training group is training
  // only, the serving group inference only; other fields say so here
  // (cp, ZeRO, ... are training settings an inference job refuses).
  mode?: 'training' | 'inference';
}

export type JobMode = 'training' | 'inference';
/** Whether a field belongs in a job of this mode. */
export const inMode = (f: FieldSchema, mode: JobMode): boolean =>
  (f.mode ?? (f.group === 'training' ? 'training' : f.group === 'serving' ? 'inference' : mode)) === mode;

export const JOB_SCHEMA: FieldSchema[] = [
  // model: overrides on the preset (or HF config); empty = the base's value
  { path: 'model.num_layers', title: 'Layers (L)', type: 'integer', minimum: 1, group: 'model', description: 'Transformer layers; override the preset to make a job smaller' },
  { path: 'model.hidden', title: 'Hidden (h)', type: 'integer', minimum: 1, group: 'model', advanced: true, description: 'Model width' },
  { path: 'model.num_heads', title: 'Heads (a)', type: 'integer', minimum: 1, group: 'model', advanced: true, description: 'Attention heads; must divide by tp' },
  { path: 'model.num_kv_heads', title: 'KV heads (kv)', type: 'integer', minimum: 1, group: 'model', advanced: true, description: 'a: MHA, 1: MQA, else GQA' },
  { path: 'model.head_dim', title: 'Head dim (d)', type: 'integer', minimum: 1, group: 'model', advanced: true, description: 'Default h / a' },
  { path: 'model.ffn_hidden', title: 'MLP width (f)', type: 'integer', minimum: 1, group: 'model', advanced: true, description: 'Default 4h' },
  { path: 'model.vocab', title: 'Vocabulary (V)', type: 'integer', minimum: 1, group: 'model', advanced: true, description: 'Must divide by tp (vocab-parallel embedding)' },
  { path: 'model.max_positions', title: 'Max positions', type: 'integer', minimum: 1, group: 'model', advanced: true, description: 'Rows of the learned position table' },
  { path: 'model.norm', title: 'Norm', type: 'string', enum: ['layernorm', 'rmsnorm'], group: 'model', advanced: true, description: 'LayerNorm or RMSNorm' },
  { path: 'model.mlp', title: 'MLP', type: 'string', enum: ['gelu', 'swiglu', 'relu2'], group: 'model', advanced: true, description: '2-matrix GeLU, 3-matrix gated SwiGLU, or squared ReLU (Nemotron-H)' },
  { path: 'model.position', title: 'Positions', type: 'string', enum: ['learned', 'rope', 'none'], group: 'model', advanced: true, description: 'Learned table, rotary, or none (NoPE hybrids)' },
  { path: 'model.tied_embeddings', title: 'Tied embeddings', type: 'boolean', group: 'model', advanced: true, description: 'Output layer reuses the token embedding' },
  { path: 'model.linear_bias', title: 'Linear biases', type: 'boolean', group: 'model', advanced: true, description: 'Biases on all linear layers' },
  { path: 'model.dropout', title: 'Dropout', type: 'boolean', group: 'model', advanced: true, description: 'Hidden + attention dropout' },
  { path: 'model.flash_attention', title: 'Flash attention', type: 'boolean', group: 'model', advanced: true, description: 'Fused attention: no s² activations saved. Default: true for presets and Hugging Face imports trained with it (Llama, Mixtral, DeepSeek, Qwen, …), false for gpt3-* presets, gpt2 and an explicit model' },
  { path: 'model.strict', title: 'Strict HF import', type: 'boolean', group: 'model', description: 'Hugging Face configs only: off imports a config with fields stagecraft does not model (e.g. the vision tower of a multimodal Gemma-3, which then runs as its text model) and lists them as warnings in the summary; on (the default) refuses them, naming the field' },
  // mixture of experts (MoE): num_experts > 0 turns every MLP from first_dense_layers on into a router + experts
  { path: 'model.num_experts', title: 'Experts (E)', type: 'integer', minimum: 0, group: 'model', advanced: true, description: 'Mixture of experts: routed experts per MoE layer (0 = dense model). Every expert is an MLP of width fe; all E count towards the parameters, but each token uses only k of them' },
  { path: 'model.experts_per_token', title: 'Experts per token (k)', type: 'integer', minimum: 1, group: 'model', advanced: true, description: 'Top-k routing: the router sends each token to k of the E experts, so a token’s FLOPs (and the active parameters) grow with k, not E' },
  { path: 'model.moe_ffn_hidden', title: 'Expert MLP width (fe)', type: 'integer', minimum: 1, group: 'model', advanced: true, description: 'Width of every expert’s MLP (same kind as the dense MLP: GeLU or SwiGLU)' },
  { path: 'model.shared_experts', title: 'Shared experts', type: 'integer', minimum: 0, group: 'model', advanced: true, description: 'Experts every token uses (DeepSeek: 1); they run beside the routed ones like a dense MLP, split over tp, with no all-to-all' },
  { path: 'model.first_dense_layers', title: 'First dense layers', type: 'integer', minimum: 0, group: 'model', advanced: true, description: 'The first layers keep a dense MLP of width f (DeepSeek-V3: 3); must be ≤ L, so set it when you cut a DeepSeek preset to few layers' },
  { path: 'model.capacity_factor', title: 'Capacity factor', type: 'number', minimum: 1, maximum: 64, step: 0.05, group: 'model', advanced: true, description: 'Expert buffer padding: each expert takes ⌈c·T·k/E⌉ tokens from each source rank (routing is modelled as uniform); > 1 makes the all-to-all buffers and the expert GEMMs bigger' },
  { path: 'model.router_bias', title: 'Router bias', type: 'boolean', group: 'model', advanced: true, description: 'Per-expert routing bias (DeepSeek-V3’s auxiliary-loss-free balancing): E more parameters per MoE layer' },
  // multi-head latent attention (MLA, DeepSeek): on when kv_lora_rank > 0
  { path: 'model.kv_lora_rank', title: 'MLA K/V latent (kvr)', type: 'integer', minimum: 0, group: 'model', advanced: true, description: 'Multi-head latent attention (DeepSeek) when > 0: keys and values are projected down to this compressed latent and back up per head; head dim then means the no-RoPE part of a query/key head' },
  { path: 'model.q_lora_rank', title: 'MLA query latent (qr)', type: 'integer', minimum: 0, group: 'model', advanced: true, description: 'MLA: queries go through a latent of this width too; 0 = projected straight from h' },
  { path: 'model.qk_rope_head_dim', title: 'MLA RoPE head dim (dr)', type: 'integer', minimum: 0, group: 'model', advanced: true, description: 'MLA: rotary part of each query/key head; the key part is one shared head for all heads' },
  { path: 'model.v_head_dim', title: 'MLA value head dim (dv)', type: 'integer', minimum: 0, group: 'model', advanced: true, description: 'MLA: width of a value head' },
  // parallel
  { path: 'parallel.dp', title: 'Data parallel (dp)', type: 'integer', minimum: 1, default: 1, group: 'parallel', description: 'Training: replicas that each process a slice of the batch; gradients are all-reduced over dp. Inference: attention data parallelism (DeepSeek’s DP attention): each dp rank runs attention for its own sequences and caches only their KV, while the MoE layers’ experts are spread over the same ranks by ep' },
  { path: 'parallel.tp', title: 'Tensor parallel (tp)', type: 'integer', minimum: 1, default: 1, group: 'parallel', description: 'Megatron tensor parallelism: weights split across tp ranks; activations reduced over tp' },
  { path: 'parallel.sequence_parallel', title: 'Sequence parallel', type: 'boolean', default: false, group: 'parallel', mode: 'training', description: 'Megatron SP: norms/dropout run sequence-sharded; all-reduces become reduce-scatter + all-gather' },
  { path: 'parallel.pp', title: 'Pipeline stages (pp)', type: 'integer', minimum: 1, default: 1, group: 'parallel', description: 'Layers split over pp stages; activations and their gradients cross stage boundaries as send/recv per micro-batch' },
  { path: 'parallel.cp', title: 'Context parallel (cp)', type: 'integer', minimum: 1, default: 1, group: 'parallel', mode: 'training', description: 'The sequence split over cp ranks; attention all-gathers K and V (Llama 3) and reduce-scatters their gradients' },
  { path: 'parallel.cp_algorithm', title: 'CP algorithm', type: 'string', enum: ['allgather', 'ring'], default: 'allgather', group: 'parallel', mode: 'training', advanced: true, description: 'allgather: K/V gathered over cp (Llama 3); ring: K/V blocks passed around the ring, overlapped with attention' },
  { path: 'parallel.virtual_stages', title: 'Virtual stages (v)', type: 'integer', minimum: 1, default: 1, group: 'parallel', mode: 'training', advanced: true, description: 'Model chunks per pipeline rank (interleaved 1F1B): bubble (p-1)/(v m) instead of (p-1)/m' },
  { path: 'parallel.ep', title: 'Expert parallel (ep)', type: 'integer', minimum: 1, default: 1, group: 'parallel', description: 'MoE models only: each MoE layer’s E experts split over ep ranks (E/ep each); tokens travel to their experts by all-to-all over ep (dispatch) and back (combine). As in Megatron-LM, ep takes no extra GPUs: a stage’s tp × cp × dp ranks are re-divided as expert tp × ep × expert dp for the MoE layers (with tp > 1 a MoE model needs sequence parallelism)' },
  { path: 'parallel.expert_tp', title: 'Expert tensor parallel', type: 'integer', minimum: 1, default: 'tp', group: 'parallel', advanced: true, description: 'Tensor parallelism inside each expert (default: tp): expert weights split over etp ranks; dispatched tokens are all-gathered over etp and the expert outputs reduce-scattered. Ranks left over after etp × ep form expert data parallelism (edp), over which expert gradients are reduced' },
  { path: 'parallel.zero', title: 'ZeRO stage', type: 'integer', minimum: 0, maximum: 3, default: 0, group: 'parallel', mode: 'training', description: '1: optimizer state sharded over dp; 2: + gradients; 3: + parameters (FSDP), gathered per layer' },
  { path: 'parallel.shard_group', title: 'ZeRO shard group (HSDP)', type: 'integer', minimum: 1, default: 'dp·cp', group: 'parallel', mode: 'training', advanced: true, description: 'Hybrid sharded data parallelism (needs ZeRO ≥ 1): state sharded over this many data-parallel ranks (reduce-scatter / all-gather over dp_shard, e.g. within a node) and replicated across the rest (gradient all-reduce over dp_replicate)' },
  { path: 'parallel.order', title: 'Rank order', type: 'string', enum: ['megatron', 'llama3'], default: 'megatron', group: 'parallel', advanced: true, description: 'Which axis varies fastest across ranks: Megatron [tp, cp, dp, pp] or Llama 3 [tp, cp, pp, dp]' },
  // training
  { path: 'training.seq_len', title: 'Sequence length (s)', type: 'integer', minimum: 1, default: 2048, group: 'training', description: 'Tokens per sequence' },
  { path: 'training.micro_batch_size', title: 'Micro-batch (b)', type: 'integer', minimum: 1, default: 1, group: 'training', description: 'Sequences per micro-batch per dp rank' },
  { path: 'training.global_batch_size', title: 'Global batch', type: 'integer', minimum: 1, group: 'training', description: 'Sequences per iteration; must divide by dp × micro-batch (gradient accumulation)' },
  { path: 'training.schedule', title: 'Pipeline schedule', type: 'string', enum: ['1f1b', 'gpipe', 'interleaved-1f1b', 'zero-bubble'], default: '1f1b', group: 'training', description: 'Order of forward/backward steps per stage; decides the bubble and how many micro-batches of activations a stage holds' },
  { path: 'training.recompute', title: 'Recompute', type: 'string', enum: ['none', 'selective', 'full'], default: 'none', group: 'training', description: 'Re-run the attention core (selective) or whole layers (full) in backward instead of keeping their activations' },
  { path: 'training.dtype', title: 'Dtype', type: 'string', enum: ['bf16', 'fp16', 'tf32', 'fp32'], default: 'bf16', group: 'training', description: 'Activations and GEMM dtype (FP8 training: the FP8 recipe below)' },
  { path: 'training.fp8_recipe', title: 'FP8 recipe', type: 'string', enum: ['none', 'delayed', 'tensorwise', 'blockwise', 'mxfp8'], default: 'none', group: 'training', advanced: true, description: 'FP8 training as Transformer Engine runs it: the linear layers’ GEMMs (forward, dgrad, wgrad) at FP8 with their cast/transpose and amax kernels and FP8 weight copies; attention, norms, embedding and output layer stay bf16. delayed: amax history; tensorwise: current scaling; blockwise: 1×128/128×128 blocks; mxfp8: 32-element blocks (Blackwell)' },
  { path: 'training.tp_comm_overlap', title: 'TP comm overlap', type: 'boolean', default: false, group: 'training', mode: 'training', advanced: true, description: 'Megatron-LM --tp-comm-overlap: Transformer Engine overlaps the sequence-parallel all-gathers / reduce-scatters with their GEMMs (tp > 1 with sequence parallelism). Default off, as in Megatron-LM' },
  { path: 'training.overlap_grad_reduce', title: 'Overlap grad reduce', type: 'boolean', default: false, group: 'training', mode: 'training', advanced: true, description: 'Megatron-LM --overlap-grad-reduce: gradient buckets reduced during backward; off: one reduction after backward (Megatron-LM\'s default)' },
  { path: 'training.overlap_param_gather', title: 'Overlap param gather', type: 'boolean', default: false, group: 'training', mode: 'training', advanced: true, description: 'Megatron-LM --overlap-param-gather: ZeRO 1/2 parameter all-gathers during the next forward; needs overlap grad reduce. Default off, as in Megatron-LM' },
  { path: 'training.grad_reduce_dtype', title: 'Grad reduce dtype', type: 'string', enum: ['fp32', 'bf16', 'fp16'], default: 'fp32', group: 'training', advanced: true, description: 'Main gradients and their dp reduction' },
  { path: 'training.dp_bucket_mb', title: 'DP bucket (MiB)', type: 'number', minimum: 0, default: 25, group: 'training', advanced: true, description: 'DDP gradient bucket size' },
  { path: 'training.optimizer', title: 'Optimizer', type: 'string', enum: ['adamw', 'adam', 'sgd'], default: 'adamw', group: 'training', advanced: true, description: 'Optimizer kind' },
  { path: 'training.optimizer_bytes_per_param', title: 'Optimizer bytes/param', type: 'integer', minimum: 0, group: 'training', advanced: true, description: '12 for Adam (fp32 master + 2 moments)' },
  // serving (inference mode only; docs/inference.md)
  { path: 'serving.prompt_tokens', title: 'Prompt tokens', type: 'integer', minimum: 1, default: 1024, group: 'serving', description: 'Tokens of each request’s prompt: prefill processes them all at once (causal attention over the prompt) and writes their keys and values into the KV cache. Off while a request mix (below) is given' },
  { path: 'serving.output_tokens', title: 'Output tokens', type: 'integer', minimum: 1, default: 256, group: 'serving', description: 'Tokens each request generates: one decode step per token, each reading the weights and every cached token of the sequence. Off while a request mix (below) is given' },
  { path: 'serving.requests', title: 'Request mix', type: 'requests', group: 'serving', description: 'A mix of request lengths instead of the fixed prompt and output tokens above (docs/inference.md, “Request mixes”): one class a line, “prompt output weight”, e.g. “1000 100 3” and “3000 300 1” = three of four requests 1,000 + 100 tokens, one of four 3,000 + 300 (weight defaults to 1; a JSON list is accepted too). Empty = the fixed lengths. TTFT is the mean over requests, each class’s own in the summary; the fit counts sequences of the mix’s mean cache' },
  { path: 'serving.concurrency', title: 'Concurrency', type: 'integer', minimum: 0, default: 0, group: 'serving', description: 'Sequences decoded together by the instance (split evenly over its attention-dp ranks): the batch of a decode step. 0 = as many as fit beside the weights: more sequences share each read of the weights (throughput) but every step reads more KV cache (latency)' },
  { path: 'serving.kv_dtype', title: 'KV-cache dtype', type: 'string', enum: ['bf16', 'fp8'], default: 'bf16', group: 'serving', description: 'bf16 (2 bytes) or fp8 (1 byte) per cached value: fp8 halves the cache, so twice the sequences fit and a decode step reads half the bytes' },
  { path: 'serving.weights_dtype', title: 'Weights dtype', type: 'string', enum: ['bf16', 'fp8', 'int4', 'nvfp4', 'mxfp4'], default: 'bf16', group: 'serving', description: 'bf16 or fp8 weights (and GEMMs): fp8 halves the weights per rank, leaving more memory for the KV cache and halving the bytes each decode step must read. 4-bit linear-layer weights: int4 (AWQ/GPTQ, group 128, dequantized to bf16 in the GEMM: any GPU), nvfp4 / mxfp4 (GEMMs on FP4 tensor cores: b200 only)' },
  { path: 'serving.chunk_tokens', title: 'Prefill chunk (tokens)', type: 'integer', minimum: 0, default: 0, group: 'serving', advanced: true, description: 'Chunked prefill: prompt tokens per iteration, mixed into decode iterations (continuous batching); 0 = the whole prompt in one prefill' },
  { path: 'serving.page_tokens', title: 'KV page (tokens)', type: 'integer', minimum: 1, default: 16, group: 'serving', advanced: true, description: 'Paged KV cache block size: a sequence takes whole pages, so on average half a page per sequence is wasted (fragmentation)' },
  { path: 'serving.replicas', title: 'Replicas', type: 'integer', minimum: 1, default: 1, group: 'serving', advanced: true, description: 'Independent copies of the whole serving instance (no communication between them): they multiply throughput, not latency' },
  // A workload of requests that arrive, queue and finish (docs/inference.md
  // "Workload"): the summary then has the percentiles of the simulated run.
  { path: 'serving.workload.arrival', title: 'Workload arrivals', type: 'string', enum: ['poisson', 'fixed', 'burst'], group: 'serving', description: 'Requests over time, run through a simulator of the engine’s scheduler (continuous batching, chunked prefill, preemption when the KV cache is full): poisson = random arrivals at the rate below, fixed = one every 1/rate s, burst = all at once. Empty = no workload (the fixed-concurrency figures only). Needs a rate and a duration or request count; lengths are the prompt and output tokens above (or the mix)' },
  { path: 'serving.workload.rate', title: 'Arrival rate (req/s)', type: 'number', minimum: 0, step: 0.5, group: 'serving', description: 'Requests per second arriving at the whole deployment (poisson, fixed). Above the capacity the queue grows and TTFT with it' },
  { path: 'serving.workload.duration_seconds', title: 'Workload duration (s)', type: 'number', minimum: 0, group: 'serving', description: 'Arrivals during this many seconds (poisson, fixed); or give a request count' },
  { path: 'serving.workload.requests', title: 'Workload requests', type: 'integer', minimum: 1, maximum: 200000, group: 'serving', description: 'At most this many requests (1 to 200,000); the count of a burst' },
  { path: 'serving.workload.seed', title: 'Workload seed', type: 'integer', minimum: 0, default: 0, group: 'serving', advanced: true, description: 'Seed of the arrival and length draws: the same seed gives the same requests, the same percentiles, byte for byte, in the browser and the CLI' },
  { path: 'serving.slo.ttft_seconds_p99', title: 'SLO: P99 TTFT (s)', type: 'number', minimum: 0, step: 0.1, group: 'serving', description: 'Latency target: 99 % of requests get their first token within this many seconds. With a target the serving view searches the highest request rate that meets it (the capacity) and draws the latency–rate curve; with a workload the summary counts the requests meeting both targets (goodput)' },
  { path: 'serving.slo.tpot_seconds_p99', title: 'SLO: P99 TPOT (s)', type: 'number', minimum: 0, step: 0.005, group: 'serving', description: 'Latency target: 99 % of requests get their output tokens at this many seconds per token or faster (time per output token after the first), e.g. 0.05 = 20 tokens/s' },
  ...(['prefill', 'decode'] as const).flatMap((pool) => (['tp', 'pp', 'dp', 'ep', 'expert_tp', 'replicas'] as const).map((k): FieldSchema => ({
    path: `serving.disaggregated.${pool}.${k}`, title: `${pool === 'prefill' ? 'Prefill' : 'Decode'} pool ${k}`, type: 'integer', minimum: 1, group: 'serving', advanced: true,
    description: `Disaggregated serving: a separate ${pool} pool with its own layout (set both pools; empty = the job’s own ${k}${k === 'replicas' ? ', 1' : ''}). ` +
      (pool === 'prefill' ? 'Prefill ranks compute the prompt’s KV cache and send it to the decode ranks (send/recv in the traces).' : 'Decode ranks receive each sequence’s KV cache and generate its tokens, never slowed by a long prefill.'),
  }))),
  // hardware
  { path: 'hardware.preset', title: 'GPU', type: 'string', enum: ['h100', 'a100', 'h200', 'b200'], default: 'h100', group: 'hardware', description: 'Hardware profile: peak FLOP/s, memory, NVLink and network bandwidth' },
  { path: 'hardware.compute_efficiency', title: 'Compute efficiency', type: 'number', minimum: 0, maximum: 1, step: 0.05, group: 'hardware', advanced: true, description: 'Fraction of peak FLOP/s a GEMM reaches' },
  { path: 'hardware.gpus_per_node', title: 'GPUs per node', type: 'integer', minimum: 1, group: 'hardware', advanced: true, description: 'Groups within one node use NVLink' },
  { path: 'hardware.intra_node_bw', title: 'NVLink bw (B/s)', type: 'number', minimum: 1, group: 'hardware', advanced: true, description: 'Per-GPU intra-node bandwidth' },
  { path: 'hardware.inter_node_bw', title: 'Network bw (B/s)', type: 'number', minimum: 1, group: 'hardware', advanced: true, description: 'Per-GPU inter-node bandwidth' },
];

// Job presets: what a lecture would start from.
export interface JobPreset { id: string; title: string; job: Record<string, unknown> }
export const JOB_PRESETS: JobPreset[] = [
  { id: 'teach', title: 'Teaching: GPT 2 layers, tp 2 × dp 2', job: { model: { preset: 'gpt3-1.7b', num_layers: 2 }, parallel: { dp: 2, tp: 2 }, training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 4 } } },
  { id: 'teach-sp', title: 'Teaching: same with sequence parallelism', job: { model: { preset: 'gpt3-1.7b', num_layers: 2 }, parallel: { dp: 2, tp: 2, sequence_parallel: true }, training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 4 } } },
  { id: 'gpt3-175b', title: 'GPT-3 175B, tp 8 × dp 4, SP (32 H100) — does not fit, on purpose: 175 B parameters × 18 bytes (weights, fp32 gradients, Adam) need 3.2 TB, more than 32 GPUs hold', job: { model: { preset: 'gpt3-175b' }, parallel: { dp: 4, tp: 8, sequence_parallel: true }, training: { seq_len: 2048, micro_batch_size: 1, global_batch_size: 8 } } },
  { id: 'llama3-8b', title: 'Llama 3 8B, tp 2 × dp 8, ZeRO-1, selective recompute', job: { model: { preset: 'llama3-8b' }, parallel: { dp: 8, tp: 2, sequence_parallel: true, zero: 1 }, training: { seq_len: 8192, micro_batch_size: 1, global_batch_size: 32, recompute: 'selective' } } },
  { id: 'llama2-70b', title: 'Llama 2 70B, tp 8 × dp 16, ZeRO-1, selective recompute (128 GPUs)', job: { model: { preset: 'llama2-70b' }, parallel: { dp: 16, tp: 8, sequence_parallel: true, zero: 1 }, training: { seq_len: 4096, micro_batch_size: 1, global_batch_size: 128, recompute: 'selective' } } },
  { id: 'pipeline', title: 'Teaching: 4-stage pipeline, 1F1B, 8 micro-batches', job: { model: { preset: 'gpt3-1.7b', num_layers: 8 }, parallel: { pp: 4, dp: 1, tp: 1 }, training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 8, schedule: '1f1b' } } },
  { id: 'llama3-70b-pp', title: 'Llama 3 70B, tp 8 × pp 8 × dp 2, interleaved (128 GPUs)', job: { model: { preset: 'llama3-70b' }, parallel: { dp: 2, tp: 8, pp: 8, virtual_stages: 2, sequence_parallel: true }, training: { seq_len: 8192, micro_batch_size: 1, global_batch_size: 32, schedule: 'interleaved-1f1b', recompute: 'selective' } } },
  { id: 'mixtral-8x7b', title: 'Mixtral 8×7B: tp 2 × dp 4 × pp 4, ep 4, SP (32 H100)', job: { model: { preset: 'mixtral-8x7b' }, parallel: { dp: 4, tp: 2, pp: 4, ep: 4, sequence_parallel: true }, training: { seq_len: 4096, micro_batch_size: 1, global_batch_size: 32 } } },
  { id: 'deepseek-v3-small', title: 'DeepSeek-V3, 4 of 61 layers: MLA + 256 experts, tp 2 × dp 8, ep 8, ZeRO-1 (16 GPUs)', job: { model: { preset: 'deepseek-v3', num_layers: 4, first_dense_layers: 1 }, parallel: { dp: 8, tp: 2, ep: 8, expert_tp: 1, zero: 1, sequence_parallel: true }, training: { seq_len: 1024, micro_batch_size: 1, global_batch_size: 16 } } },
  { id: 'teach-hsdp', title: 'Teaching: HSDP, ZeRO-3 sharded over 4 of dp 8', job: { model: { preset: 'gpt3-1.7b', num_layers: 2 }, parallel: { dp: 8, zero: 3, shard_group: 4 }, training: { seq_len: 1024, micro_batch_size: 1, global_batch_size: 8 } } },
  { id: 'llama3-70b-serve', title: 'Serving: Llama 3 70B on 8 H100, tp 8, 8K context', job: { mode: 'inference', model: { preset: 'llama3-70b' }, parallel: { tp: 8 }, serving: { prompt_tokens: 7680, output_tokens: 512 } } },
  { id: 'llama3-70b-serve-workload', title: 'Serving: Llama 3 70B on 8 H100, tp 8, 10 requests/s for 10 minutes (Poisson), SLO P99 TTFT 1 s, TPOT 50 ms: capacity', job: { mode: 'inference', model: { preset: 'llama3-70b' }, parallel: { tp: 8 }, serving: { prompt_tokens: 2048, output_tokens: 256, workload: { arrival: 'poisson', rate: 10, duration_seconds: 600, seed: 1 }, slo: { ttft_seconds_p99: 1, tpot_seconds_p99: 0.05 } } } },
  { id: 'llama3-8b-serve-fp8', title: 'Serving: Llama 3 8B on 1 H100, fp8 weights and KV cache, 64 requests', job: { mode: 'inference', model: { preset: 'llama3-8b' }, parallel: { tp: 1 }, serving: { prompt_tokens: 2048, output_tokens: 512, concurrency: 64, weights_dtype: 'fp8', kv_dtype: 'fp8' } } },
  { id: 'llama3-8b-serve-mix', title: 'Serving: Llama 3 8B on 1 H100, a request mix: 3 in 4 chats (1,000 + 100 tokens), 1 in 4 summaries (3,000 + 300), 32 requests', job: { mode: 'inference', model: { preset: 'llama3-8b' }, parallel: { tp: 1 }, serving: { requests: [{ prompt_tokens: 1000, output_tokens: 100, weight: 3 }, { prompt_tokens: 3000, output_tokens: 300, weight: 1 }], concurrency: 32 } } },
  { id: 'mixtral-8x7b-serve', title: 'Serving: Mixtral 8×7B on 8 H100, tp 8 with ep 8 over the tp ranks (one whole expert per GPU)', job: { mode: 'inference', model: { preset: 'mixtral-8x7b' }, parallel: { tp: 8, ep: 8 }, serving: { prompt_tokens: 2048, output_tokens: 512 } } },
  { id: 'deepseek-v3-serve', title: 'Serving: DeepSeek-V3, 4 of 61 layers, disaggregated: prefill dp 8 × ep 8, decode dp 16 × ep 16 (MLA, DP attention)', job: { mode: 'inference', model: { preset: 'deepseek-v3', num_layers: 4, first_dense_layers: 1 }, parallel: { tp: 1, dp: 8, ep: 8, expert_tp: 1 }, serving: { prompt_tokens: 2048, output_tokens: 256, concurrency: 32, weights_dtype: 'fp8', disaggregated: { prefill: { dp: 8, ep: 8 }, decode: { dp: 16, ep: 16 } } } } },
  { id: 'huge', title: 'GPT-3 175B on 32,768 GPUs (tp 8 × dp 4096) — a scale test; does not fit, on purpose: each rank holds 1/8 of the model, 131 GB of weights and gradients', job: { model: { preset: 'gpt3-175b' }, parallel: { dp: 4096, tp: 8, sequence_parallel: true }, training: { seq_len: 2048, micro_batch_size: 1, global_batch_size: 4096 } } },
];
