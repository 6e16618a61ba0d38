// Hugging Face configs of the families added for issue 15 (olmo2, phi3
// partial rotary, gemma3 multimodal, qwen2 windows, Qwen-MoE layer rules):
// what the summary's hf_import block (the web app's "Hugging Face config"
// card) says, and parameter counts by hand. Shapes are the real models'
// with small layer counts (tests/fixtures/hf holds the full files).
import { json } from './jobs.mjs';

export const name = 'hf';

const TRAINING = { seq_len: 64, micro_batch_size: 1, global_batch_size: 1 };
const job = (hf_config, extra = {}) => ({ model: { hf_config, ...extra }, training: TRAINING });
const SMALL = { hidden_size: 64, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2,
  intermediate_size: 128, vocab_size: 100 };

function summary(engine, assert, j) {
  const r = JSON.parse(engine.inspect(json(j)));
  assert.equal(r.ok, true, `inspect ok (${r.error?.path ?? ''} ${r.error?.message ?? ''})`);
  return r.summary;
}

export const cases = [
  {
    name: 'olmo2: family and features in hf_import; q/k norms over all heads add (a + kv) d per layer',
    run({ engine, assert }) {
      const olmo = summary(engine, assert, job({ ...SMALL, model_type: 'olmo2' }));
      const llama = summary(engine, assert, job({ ...SMALL, model_type: 'llama' }));
      assert.equal(olmo.hf_import.family, 'olmo2');
      const f = olmo.hf_import.features.join(' | ');
      assert.ok(f.includes('post-sublayer norms (no pre-norm)'), f);
      assert.ok(f.includes('q/k RMSNorm over all heads'), f);
      assert.equal(olmo.hf_import.warnings.length, 0, 'no warnings');
      assert.equal(olmo.parameters.total - llama.parameters.total, 2 * (4 + 2) * 16, '2 layers x (a + kv) d');
    },
  },
  {
    name: 'phi3 (Phi-4-mini shapes): partial rotary 96 of 128 in the features, no parameter change',
    run({ engine, assert }) {
      const phi4 = { model_type: 'phi3', hidden_size: 3072, num_hidden_layers: 2, num_attention_heads: 24,
        num_key_value_heads: 8, intermediate_size: 8192, vocab_size: 200064, tie_word_embeddings: true,
        partial_rotary_factor: 0.75, sliding_window: 262144 };
      const s = summary(engine, assert, job(phi4));
      assert.equal(s.hf_import.family, 'phi3');
      assert.ok(s.hf_import.features.some((x) => x.startsWith('partial rotary (96 of 128')), s.hf_import.features.join(' | '));
      const full = summary(engine, assert, job({ ...phi4, partial_rotary_factor: 1.0 }));
      assert.equal(s.parameters.total, full.parameters.total, 'rotary width changes no parameter');
      // By hand, per layer: q and o 2 h^2 (a d = h), k and v 2 h (kv d = 1024), SwiGLU 3 h f, 2 norms of h; tied V h; final h.
      const h = 3072, L = 2;
      assert.equal(s.parameters.total, L * (2 * h * h + 2 * h * 1024 + 3 * h * 8192 + 2 * h) + 200064 * h + h);
    },
  },
  {
    name: 'gemma3 multimodal: refused naming vision_config; strict false imports the text model and says so',
    run({ engine, assert }) {
      const cfg = { architectures: ['Gemma3ForConditionalGeneration'], model_type: 'gemma3',
        text_config: { hidden_size: 2560, intermediate_size: 10240, model_type: 'gemma3_text', num_hidden_layers: 34,
          rope_scaling: { factor: 8.0, rope_type: 'linear' }, sliding_window: 1024 },
        vision_config: { hidden_size: 1152, image_size: 896, intermediate_size: 4304, model_type: 'siglip_vision_model',
          num_attention_heads: 16, num_hidden_layers: 27, patch_size: 14, vision_use_head: false } };
      const r = JSON.parse(engine.inspect(json(job(cfg, { num_layers: 2 }))));
      assert.error(r, 'unsupported', 'model.hf_config.vision_config');
      const s = summary(engine, assert, job(cfg, { num_layers: 2, strict: false }));
      assert.equal(s.hf_import.family, 'gemma3');
      assert.ok(s.hf_import.features[0].includes('text model of a multimodal config'), s.hf_import.features[0]);
      assert.equal(s.hf_import.warnings.length, 1, 'one warning');
      assert.ok(/vision tower \(siglip_vision_model, 27 layers\)/.test(s.hf_import.warnings[0]), s.hf_import.warnings[0]);
    },
  },
  {
    name: 'qwen2 use_sliding_window: the windowed layers (from max_window_layers) in the features',
    run({ engine, assert }) {
      const s = summary(engine, assert, job({ ...SMALL, model_type: 'qwen2', use_sliding_window: true,
        sliding_window: 16, max_window_layers: 1 }));
      assert.equal(s.hf_import.family, 'qwen2');
      assert.ok(s.hf_import.features.includes('sliding-window attention (16) on layers 1..1'), s.hf_import.features.join(' | '));
    },
  },
  {
    name: 'qwen3_moe decoder_sparse_step / mlp_only_layers: MoE layer set in the features, parameters by hand',
    run({ engine, assert }) {
      const base = { ...SMALL, model_type: 'qwen3_moe', num_hidden_layers: 4, head_dim: 16, num_experts: 4,
        num_experts_per_tok: 2, moe_intermediate_size: 32 };
      const every = summary(engine, assert, job(base));
      const step = summary(engine, assert, job({ ...base, decoder_sparse_step: 2, mlp_only_layers: [3] }));
      const f = step.hf_import.features.join(' | ');
      assert.ok(f.includes('MoE on layers l with (l + 1) % 2 = 0 (decoder_sparse_step)') && f.includes('dense MLP on layers 3 (mlp_only_layers)'), f);
      // Layers 0, 2, 3 dense (3 h f) instead of MoE (E 3 h fe + router h E).
      const dense = 3 * 64 * 128, moe = 4 * 3 * 64 * 32 + 64 * 4;
      assert.equal(step.parameters.total - every.parameters.total, 3 * (dense - moe));
    },
  },
];
