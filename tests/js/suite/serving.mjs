// Serving jobs ("mode": "inference", docs/inference.md) through the bridge:
// the KV cache per token and the weights per rank against hand formulas
// (written from the models' papers, not from the engine), the sequences
// that fit against the memory they leave, the latency-throughput sweep's
// physics, per-phase traces and groups, errors that name the field, a
// seeded workload and the capacity search byte for byte as the native CLI
// writes them, and the capacity search's budget and targets.
import { json, SERVE_WORKLOAD_JOB } from './jobs.mjs';
import { decodeTrace } from '../../../web/src/lib/chakra.js';
import { sweepConcurrencies, curvePoints, niceCeil, parseRequests, formatRequests, mixMean } from '../../../web/src/lib/serving.js';

export const name = 'serving';

// Llama 3 8B cut to 4 layers, tp 2 (GQA: 32 query heads, 8 KV heads of 128).
export const SERVE_GQA = {
  mode: 'inference', model: { preset: 'llama3-8b', num_layers: 4 }, parallel: { tp: 2 },
  serving: { prompt_tokens: 1000, output_tokens: 200, concurrency: 8 },
};
// DeepSeek-V3 cut to 4 layers (1 dense), DP attention 4 x ep 4 (MLA).
export const SERVE_MLA = {
  mode: 'inference', model: { preset: 'deepseek-v3', num_layers: 4, first_dense_layers: 1 },
  parallel: { tp: 1, dp: 4, ep: 4, expert_tp: 1 },
  serving: { prompt_tokens: 512, output_tokens: 64, concurrency: 4, weights_dtype: 'fp8' },
};

// Llama 3 8B cut to 4 layers, disaggregated: prefill tp 4 pp 2 (8 ranks),
// decode tp 2 dp 2 (4 ranks); the KV transfer's world is both, 12 ranks.
export const SERVE_DIS = {
  mode: 'inference', model: { preset: 'llama3-8b', num_layers: 4 }, parallel: { tp: 2 },
  serving: { prompt_tokens: 1000, output_tokens: 200, concurrency: 2,
    disaggregated: { prefill: { tp: 4, pp: 2, dp: 1 }, decode: { tp: 2, pp: 1, dp: 2 } } },
};

// The same model with a request mix (docs/inference.md "Request mixes"):
// three in four requests 1,000 + 100 tokens, one in four 3,000 + 300.
export const SERVE_MIX = {
  mode: 'inference', model: { preset: 'llama3-8b', num_layers: 4 }, parallel: { tp: 2 },
  serving: { requests: [{ prompt_tokens: 1000, output_tokens: 100, weight: 3 }, { prompt_tokens: 3000, output_tokens: 300, weight: 1 }], concurrency: 8 },
};

const ok = (assert, text, what) => {
  const r = JSON.parse(text);
  assert.equal(r.ok, true, `${what}: ${r.error ? `${r.error.path}: ${r.error.message}` : 'ok'}`);
  return r;
};

// Hand formulas (docs/inference.md "Worked examples").
const GQA_KV_PER_TOKEN = (layers, kvHeads, headDim, bytes) => 2 * layers * kvHeads * headDim * bytes;
const MLA_KV_PER_TOKEN = (layers, latent, rope, bytes) => layers * (latent + rope) * bytes;
// Llama 3 8B shape at tp: vocab-parallel embedding and output layer, the
// attention and MLP split over tp, norms on every rank.
function llama8bParamsPerRank(layers, tp) {
  const h = 4096, V = 128256, f = 14336, a = 32, kv = 8, d = 128;
  const layer = 2 * h + (h * a * d) / tp + 2 * h * Math.max(kv / tp, 1) * d + (a * d * h) / tp + (3 * h * f) / tp;
  return (2 * V * h) / tp + h + layers * layer;
}

export const cases0 = [
  {
    name: 'KV cache per token by hand: GQA 2·L·kv·d·bytes, MLA L·(latent + RoPE key)·bytes, bf16 and fp8',
    run({ engine, assert }) {
      const gqa = ok(assert, engine.inspect(json(SERVE_GQA)), 'GQA inspect').summary;
      assert.ok(gqa.inference, 'summary.inference present for an inference job');
      assert.equal(gqa.inference.kv_cache_bytes_per_token, GQA_KV_PER_TOKEN(4, 8, 128, 2), 'Llama 3 8B (4 layers) bf16: 2·4·8·128·2');
      const fp8 = ok(assert, engine.inspect(json({ ...SERVE_GQA, serving: { ...SERVE_GQA.serving, kv_dtype: 'fp8' } })), 'fp8').summary;
      assert.equal(fp8.inference.kv_cache_bytes_per_token, GQA_KV_PER_TOKEN(4, 8, 128, 1), 'fp8 halves it');
      const mla = ok(assert, engine.inspect(json(SERVE_MLA)), 'MLA inspect').summary;
      assert.equal(mla.inference.kv_cache_bytes_per_token, MLA_KV_PER_TOKEN(4, 512, 64, 2), 'DeepSeek-V3 (4 layers): 4·(512 + 64)·2');
      // A training job has no inference block.
      const train = ok(assert, engine.inspect(json({ model: { preset: 'gpt3-1.7b', num_layers: 2 }, training: { seq_len: 128, global_batch_size: 1 } })), 'training').summary;
      assert.equal(train.inference, undefined, 'training summary has no inference block');
    },
  },
  {
    name: 'weights per rank by hand (tp splits all but the norms); fp8 weights halve them',
    run({ engine, assert }) {
      const s = ok(assert, engine.inspect(json(SERVE_GQA)), 'inspect').summary;
      assert.equal(s.inference.weights_bytes_per_rank, 2 * llama8bParamsPerRank(4, 2), 'Llama 3 8B, 4 layers, tp 2, bf16');
      const f = ok(assert, engine.inspect(json({ ...SERVE_GQA, serving: { ...SERVE_GQA.serving, weights_dtype: 'fp8' } })), 'fp8').summary;
      assert.equal(f.inference.weights_bytes_per_rank * 2, s.inference.weights_bytes_per_rank, 'fp8 weights are half of bf16');
    },
  },
  {
    name: 'sequences that fit: the cache of max sequences fits beside weights and workspace, one more does not',
    run({ engine, assert }) {
      const s = ok(assert, engine.inspect(json(SERVE_GQA)), 'inspect').summary;
      const inf = s.inference;
      const n = inf.max_concurrent_sequences;
      assert.ok(Number.isInteger(n) && n > 0, `max_concurrent_sequences ${n}`);
      // Per rank: tp 2 holds 4 of the 8 KV heads; a sequence of 1,200 tokens
      // takes ceil(1200/16) = 75 pages of 16 tokens.
      const perSeq = Math.ceil(1200 / 16) * 16 * GQA_KV_PER_TOKEN(4, 4, 128, 2);
      const capacity = 85017493504;  // the h100 profile, as CUDA reports an H100 80GB (docs/hardware.md)
      const left = capacity - inf.weights_bytes_per_rank;
      assert.ok(n * perSeq <= left, `${n} sequences (${n * perSeq} B) fit in what the weights leave (${left} B)`);
      const mem = inf.memory_bytes_per_rank ?? {};
      const workspace = Number(mem.workspace ?? 0) + Number(mem.activations ?? 0);
      assert.ok(workspace >= 0, 'workspace is not negative');
      assert.ok(n * perSeq + workspace <= left, `… with the workspace (${workspace} B)`);
      assert.ok((n + 1) * perSeq + workspace > left, `${n + 1} sequences do not fit`);
      // A model that cannot fit: Llama 3 70B, all 80 layers, on one H100 in bf16.
      const big = JSON.parse(engine.inspect(json({ mode: 'inference', model: { preset: 'llama3-70b' }, parallel: { tp: 1 }, serving: { prompt_tokens: 1024, output_tokens: 128 } })));
      if (big.ok) assert.equal(big.summary.inference.max_concurrent_sequences, 0, 'nothing fits beside 141 GB of weights');
      else assert.match(big.error.message, /tp|fp8/, `the refusal says what would make it fit: ${big.error.message}`);
    },
  },
  {
    name: 'sweep: tokens/s per GPU rise with concurrency to a plateau, TPOT never falls, per-user = 1/TPOT, a decode step >= weights ÷ HBM bandwidth',
    run({ engine, assert }) {
      const job = json(SERVE_GQA);
      const s = ok(assert, engine.inspect(job), 'inspect').summary;
      const list = sweepConcurrencies(s.inference.max_concurrent_sequences, 8);
      assert.ok(list.length >= 3, `sweep list ${list}`);
      const r = ok(assert, engine.servingSweep(job, JSON.stringify({ concurrency: list })), 'servingSweep');
      assert.equal(r.sweep.length, list.length, 'one point per concurrency');
      const hbm = 3350e9;  // h100 profile HBM bandwidth, bytes/s (docs/hardware.md)
      for (let i = 0; i < r.sweep.length; i++) {
        const p = r.sweep[i];
        assert.equal(p.concurrency, list[i], 'points in request order');
        assert.ok(p.tpot_seconds > 0 && p.ttft_seconds > 0, `point ${p.concurrency} has times`);
        assert.ok(Math.abs(p.tokens_per_second_per_user * p.tpot_seconds - 1) < 1e-6, `per-user tokens/s = 1/TPOT at ${p.concurrency}`);
        // ITL = TPOT + (sequences per dp rank - 1) x a prefill's cost / E[O]
        // (docs/inference.md "ITL"): equal at one sequence, above it after.
        if (p.concurrency === 1) assert.equal(p.itl_seconds, p.tpot_seconds, 'ITL = TPOT at one sequence: no other prefill stalls it');
        else assert.ok(p.itl_seconds > p.tpot_seconds, `ITL ${p.itl_seconds} > TPOT ${p.tpot_seconds} at ${p.concurrency}`);
        // Physics: a decode step reads at least the rank's weights and the
        // cache of every sequence it decodes (each at least its 1,000-token
        // prompt; tp 2 holds 4 of the 8 KV heads: 2·4·4·128·2 B per token).
        // Not the input embedding table: a step gathers only its tokens'
        // rows of it (Llama 3 8B: vocabulary 128,256 x hidden 4,096 in bf16,
        // split over tp 2; the untied output layer is read whole and stays in).
        const embeddingTable = 128256 * 4096 * 2 / 2;
        const floor = (s.inference.weights_bytes_per_rank - embeddingTable + p.concurrency * 1000 * GQA_KV_PER_TOKEN(4, 4, 128, 2)) / hbm;
        assert.ok(p.tpot_seconds >= floor, `TPOT ${p.tpot_seconds} s >= (weights + KV cache read) / bandwidth = ${floor} s at ${p.concurrency}`);
        if (i > 0) {
          const q = r.sweep[i - 1];
          assert.ok(p.tpot_seconds >= q.tpot_seconds * (1 - 1e-9), `TPOT does not fall from ${q.concurrency} to ${p.concurrency}`);
          // Past a few hundred sequences the step is dominated by the cache
          // read and throughput saturates (a plateau, within 1 %).
          assert.ok(p.tokens_per_second_per_gpu >= q.tokens_per_second_per_gpu * 0.99, `throughput does not fall from ${q.concurrency} to ${p.concurrency}: ${q.tokens_per_second_per_gpu} -> ${p.tokens_per_second_per_gpu}`);
        }
      }
      // At concurrency 1 a step is memory-bound: more sequences cost far
      // less than proportionally (the weights are read once per step).
      const first = r.sweep[0], last = r.sweep[r.sweep.length - 1];
      assert.ok(last.tokens_per_second_per_gpu > 2 * first.tokens_per_second_per_gpu, `batching raises throughput: ${first.tokens_per_second_per_gpu} -> ${last.tokens_per_second_per_gpu}`);
      // The chart helpers: axes cover every point.
      const c = curvePoints(r.sweep, 100, 50);
      assert.ok(c.points.every((p) => p.px >= 0 && p.px <= 100 && p.py >= 0 && p.py <= 50), 'points inside the plot');
    },
  },
  {
    name: 'chart helpers: the sweep list doubles up to what fits, thins past 12 points, keeps the job\'s own; nice axis ends',
    run({ assert }) {
      assert.equal(sweepConcurrencies(185).join(), '1,2,4,8,16,32,64,128,185', 'doubling, then the maximum');
      assert.equal(sweepConcurrencies(185, 50).join(), '1,2,4,8,16,32,50,64,128,185', 'the job\'s own concurrency added');
      assert.equal(sweepConcurrencies(5000).join(), '1,4,16,64,256,1024,4096,5000', 'thinned to every other power');
      assert.equal(sweepConcurrencies(1).join(), '1', 'one sequence');
      assert.equal(sweepConcurrencies(100, 32, 12, 16).join(), '16,32,64,96', 'multiples of the decode dp (16), the maximum rounded down to one');
      assert.equal(sweepConcurrencies(8, 0, 12, 16).length, 0, 'fewer sequences than dp ranks: no sweep');
      assert.equal(sweepConcurrencies(0).length, 0, 'no sweep when nothing fits');
      assert.equal(niceCeil(1234), 2000, 'niceCeil 1234');
      assert.equal(niceCeil(0.3), 0.5, 'niceCeil 0.3');
      assert.equal(niceCeil(100), 100, 'niceCeil 100');
      const sweep = [1, 10].map((c) => ({ concurrency: c, ttft_seconds: 0.1, tpot_seconds: 0.01 * c, tokens_per_second_per_gpu: 100 * c, tokens_per_second_per_user: 100 / c }));
      const g = curvePoints(sweep, 200, 100);
      assert.equal(g.xMax, 1000, 'x axis ends at 1,000 tokens/s');
      assert.equal(g.yMax, 100, 'y axis ends at 100 ms');
      assert.equal(g.points[1].px, 200, 'the fastest point at the right edge');
      assert.equal(g.points[1].py, 0, 'the slowest point at the top');
      assert.equal(g.points[0].py, 90, 'TPOT 10 ms of 100 at 90 % down');
    },
  },
  {
    name: 'phases: prefill and decode traces of one rank differ; decode reads the cache; groups per phase',
    run({ engine, assert }) {
      const job = json(SERVE_GQA);
      const pre = engine.rankTrace(job, 0, 'prefill');
      const dec = engine.rankTrace(job, 0, 'decode');
      assert.equal(pre.ok, true, `prefill trace ${pre.error?.message ?? ''}`);
      assert.equal(dec.ok, true, `decode trace ${dec.error?.message ?? ''}`);
      const tp = decodeTrace(pre.bytes), td = decodeTrace(dec.bytes);
      assert.ok(tp.nodes.length > 0 && td.nodes.length > 0, 'both have nodes');
      const busy = (t) => t.nodes.reduce((a, n) => a + Number(n.duration || 0), 0);
      // Prefill of 8 prompts of 1,000 tokens does far more work than one
      // decode step of 8 tokens.
      assert.ok(busy(tp) > busy(td), `prefill compute ${busy(tp)} µs > decode step ${busy(td)} µs`);
      const g = ok(assert, engine.groups(job, 'decode'), 'groups(decode)');
      assert.equal(g.worldSize, 2, 'tp 2: two ranks');
      assert.ok(Object.values(JSON.parse(g.text)).some((m) => m.length === 2), 'the tp group of 2 ranks');
      // Same bytes twice (determinism).
      assert.bytesEqual(engine.rankTrace(job, 0, 'decode').bytes, dec.bytes, 'decode trace deterministic');
    },
  },
  {
    name: 'archive of a disaggregated job: one folder per part, kv_transfer/ included; its bytes per pair by hand',
    run({ engine, assert }) {
      const job = json(SERVE_DIS);
      const m = ok(assert, engine.archiveManifest(job, 'files', 'trace', false), 'archiveManifest').manifest;
      assert.equal(m.worldSize, 12, 'the largest part: kv_transfer, 8 prefill + 4 decode ranks');
      const names = m.entries.map((e) => e.name);
      const count = (dir) => names.filter((n) => n.startsWith(dir) && n.endsWith('.et')).length;
      assert.equal(count('prefill/'), 8, 'prefill/: 8 traces');
      assert.equal(count('decode/'), 4, 'decode/: 4 traces');
      assert.equal(count('kv_transfer/'), 12, 'kv_transfer/: 12 traces');
      assert.ok(names.includes('kv_transfer/comm_groups.json') && !names.includes('kv_transfer/summary.json'), 'kv_transfer/ has groups, no summary');
      assert.equal(names[names.length - 1], 'summary.json', 'the job\'s summary.json last');
      assert.ok(!names.some((n) => n.startsWith('mixed/')), 'no mixed/ for disaggregated pools');
      // One part alone (phase): the folder, names relative; the same bytes.
      const kv = ok(assert, engine.archiveManifest(job, 'files', 'trace', false, 'kv_transfer'), 'archiveManifest kv_transfer').manifest;
      assert.equal(kv.entries.length, 13, '12 traces and comm_groups.json');
      let sent = 0, received = 0;
      const idle = [];
      for (let r = 0; r < 12; r++) {
        const whole = engine.archiveEntry(job, 'files', 'trace', `kv_transfer/trace.${r}.et`);
        const part = engine.archiveEntry(job, 'files', 'trace', `trace.${r}.et`, 'kv_transfer');
        const preview = engine.rankTrace(job, r, 'kv_transfer');
        assert.equal(whole.ok && part.ok && preview.ok, true, `kv_transfer rank ${r}`);
        assert.bytesEqual(part.bytes, whole.bytes, `rank ${r}: the folder alone = the whole archive's`);
        assert.bytesEqual(preview.bytes, whole.bytes, `rank ${r}: the preview's trace = the archive's`);
        const nodes = decodeTrace(whole.bytes).nodes;
        if (nodes.length === 1 && nodes[0].name === 'kv_transfer.idle') { idle.push(r); continue; }
        for (const n of nodes) {
          const size = Number(n.attrs.comm_size);
          if (/send/.test(n.name)) sent += size; else if (/recv/.test(n.name)) received += size;
          // By hand: prefill (tp t, stage s) holds KV heads 2t, 2t+1 of
          // layers 2s, 2s+1 and sends them whole to decode tp t / 2: 2 layers
          // x 2 heads x 1,008 tokens (63 pages of 16) x K,V x 128 x 2 B.
          assert.equal(size, 2 * 2 * 1008 * 2 * 128 * 2, `${n.name} on rank ${r}: one pair's bytes`);
        }
      }
      // The pairs carry the prompt's whole cache: 1,008 tokens x 2·4·8·128·2 B.
      assert.equal(sent, 1008 * GQA_KV_PER_TOKEN(4, 8, 128, 2), 'sent = one prompt\'s KV cache');
      assert.equal(received, sent, 'received = sent');
      // The one prompt goes to decode dp rank 0: decode dp rank 1 (transfer
      // ranks 10, 11) receives nothing and holds one no-work node, since
      // ASTRA-sim refuses a trace without nodes.
      assert.equal(idle.join(','), '10,11', 'idle ranks: decode dp rank 1');
      const info = ok(assert, engine.rankInfo(job, 9, 'kv_transfer'), 'rankInfo kv_transfer').info;
      assert.equal(info.pool, 'decode', 'rank 9 of the transfer is in the decode pool');
      assert.equal(info.pool_rank, 1, '… its rank 1');
      const g = ok(assert, engine.groups(job, 'kv_transfer'), 'groups kv_transfer');
      assert.equal(g.worldSize, 12, 'transfer world');
      assert.equal(g.text.trim(), '{}', 'point to point: no groups');
      // A colocated job has no kv_transfer part; a training job no parts.
      assert.error(JSON.parse(engine.archiveManifest(json(SERVE_GQA), 'files', 'trace', false, 'kv_transfer')), 'invalid_argument', 'phase', 'colocated: no kv_transfer');
      assert.error(JSON.parse(engine.archiveManifest(json({ model: { preset: 'gpt3-1.7b', num_layers: 2 }, training: { seq_len: 128, global_batch_size: 1 } }), 'files', 'trace', false, 'decode')), 'invalid_argument', 'phase', 'training: no phase');
    },
  },
  {
    name: 'errors name the field: training settings in an inference job, bad phase, bad sweep argument, context too long',
    run({ engine, assert }) {
      assert.error(JSON.parse(engine.inspect(json({ ...SERVE_GQA, training: { seq_len: 512 } }))), 'invalid_argument', 'training.seq_len');
      assert.error(JSON.parse(engine.inspect(json({ ...SERVE_GQA, parallel: { tp: 2, zero: 1 } }))), 'invalid_argument', 'parallel.zero');
      assert.error(JSON.parse(engine.inspect(json({ ...SERVE_GQA, serving: { ...SERVE_GQA.serving, kv_dtype: 'int4' } }))), 'invalid_argument', 'serving.kv_dtype');
      assert.error(JSON.parse(engine.inspect(json({ ...SERVE_GQA, serving: { prompt_tokens: 8000, output_tokens: 500 } }))), 'invalid_argument', 'serving.prompt_tokens');
      const badPhase = engine.rankTrace(json(SERVE_GQA), 0, 'warmup');
      assert.equal(badPhase.ok, false, 'unknown phase refused');
      assert.match(badPhase.error.path, /phase/, `path names the phase: ${badPhase.error.path}`);
      const badSweep = JSON.parse(engine.servingSweep(json(SERVE_GQA), 'not json'));
      assert.equal(badSweep.ok, false, 'a sweep argument that is not a list is refused');
      assert.match(badSweep.error.path, /concurrency/, `path names concurrency: ${badSweep.error.path}`);
    },
  },
  {
    name: 'request mix as the job editor writes it: lines to classes and back, JSON kept as JSON, nothing validated on the way',
    run({ assert }) {
      const mix = parseRequests('1000 100 3\n\n 3000 + 300 × 1 ');
      assert.equal(JSON.stringify(mix), JSON.stringify([{ prompt_tokens: 1000, output_tokens: 100, weight: 3 }, { prompt_tokens: 3000, output_tokens: 300, weight: 1 }]), 'two lines, two classes');
      assert.equal(formatRequests(mix), '1000 100 3\n3000 300 1', 'back to lines');
      assert.equal(JSON.stringify(parseRequests('512, 64')), JSON.stringify([{ prompt_tokens: 512, output_tokens: 64 }]), 'weight left out stays out (the engine defaults it to 1)');
      assert.equal(formatRequests([{ prompt_tokens: 512, output_tokens: 64 }]), '512 64', 'no weight, two numbers');
      assert.equal(parseRequests('  \n '), undefined, 'empty: no mix');
      assert.equal(formatRequests(undefined), '', 'no mix: empty box');
      // What the lines cannot say is kept as JSON, both ways.
      const odd = [{ prompt_tokens: 10, output_tokens: 5, note: 'x' }];
      assert.equal(formatRequests(odd), JSON.stringify(odd), 'an extra key: shown as JSON');
      assert.equal(JSON.stringify(parseRequests(formatRequests(odd))), JSON.stringify(odd), 'and read back unchanged');
      assert.equal(formatRequests([]), '[]', 'an empty list stays an (invalid) empty list');
      // A bad value goes to the engine as written, so its error names it.
      assert.equal(JSON.stringify(parseRequests('1000 abc')), JSON.stringify([{ prompt_tokens: 1000, output_tokens: 'abc' }]), 'a word stays a word');
      assert.equal(mixMean([{ share: 0.75, ttft_seconds: 2 }, { share: 0.25, ttft_seconds: 6 }], (c) => c.ttft_seconds), 3, 'request-weighted mean');
    },
  },
  {
    name: 'request mix through the engine: per-class shares, paged KV per sequence by hand, TTFT the request-weighted mean, ITL ≥ TPOT; errors name the class',
    run({ engine, assert }) {
      const inf = ok(assert, engine.inspect(json(SERVE_MIX)), 'mix inspect').summary.inference;
      const cls = inf.requests;
      assert.ok(Array.isArray(cls) && cls.length === 2, 'inference.requests: one entry per class');
      assert.equal(cls[0].share, 0.75, 'weights 3 : 1 -> shares 3/4');
      assert.equal(cls[1].share, 0.25, 'and 1/4');
      assert.equal(`${cls[0].prompt_tokens}+${cls[0].output_tokens},${cls[1].prompt_tokens}+${cls[1].output_tokens}`, '1000+100,3000+300', 'classes in the job order');
      // Pages of 16 tokens: 1,100 -> 69 pages = 1,104 slots; 3,300 -> 207 pages = 3,312; mean 0.75·1104 + 0.25·3312 = 1,656.
      const perTok = GQA_KV_PER_TOKEN(4, 8, 128, 2);
      assert.equal(cls[0].kv_cache_bytes_per_sequence, 1104 * perTok, 'class 1: 69 pages');
      assert.equal(cls[1].kv_cache_bytes_per_sequence, 3312 * perTok, 'class 2: 207 pages');
      assert.equal(inf.kv_cache_bytes_per_sequence, 1656 * perTok, 'mean over the mix: 1,656 slots');
      const mean = mixMean(cls, (c) => c.ttft_seconds);
      assert.ok(Math.abs(inf.ttft_seconds - mean) <= 1e-8 * mean, `ttft_seconds (summary figures carry 10 significant digits) ${inf.ttft_seconds} = Σ share·TTFT_i ${mean}`);
      assert.ok(cls[1].ttft_seconds > cls[0].ttft_seconds && cls[1].prefill_seconds > cls[0].prefill_seconds, 'the 3,000-token prompt prefills longer');
      assert.ok(inf.itl_seconds > inf.tpot_seconds, `ITL ${inf.itl_seconds} > TPOT ${inf.tpot_seconds}: other requests' prefills stall the batch at concurrency 8`);
      const one = ok(assert, engine.inspect(json({ ...SERVE_MIX, serving: { ...SERVE_MIX.serving, concurrency: 1 } })), 'mix c=1').summary.inference;
      assert.equal(one.itl_seconds, one.tpot_seconds, 'at one sequence ITL is TPOT');
      // Fixed lengths and a mix are one or the other; a bad class is named.
      assert.error(JSON.parse(engine.inspect(json({ ...SERVE_MIX, serving: { ...SERVE_MIX.serving, prompt_tokens: 10 } }))), 'invalid_argument', 'serving.requests');
      assert.error(JSON.parse(engine.inspect(json({ ...SERVE_MIX, serving: { requests: parseRequests('1000 100\n1000 abc') } }))), 'invalid_argument', 'serving.requests[1].output_tokens');
      assert.error(JSON.parse(engine.inspect(json({ ...SERVE_MIX, serving: { requests: parseRequests('1000 100 0') } }))), 'invalid_argument', 'serving.requests[0].weight');
      // A fixed-length job has no per-class list; its ITL is there too.
      const fixed = ok(assert, engine.inspect(json(SERVE_GQA)), 'fixed').summary.inference;
      assert.equal(fixed.requests, undefined, 'no inference.requests without a mix');
      assert.ok(fixed.itl_seconds >= fixed.tpot_seconds, 'fixed job: ITL ≥ TPOT');
    },
  },
];

// The capacity search's answer (docs/inference.md "Capacity").
const capacityOf = (assert, engine, job, args, what) => ok(assert, engine.servingCapacity(json(job), JSON.stringify(args)), what).capacity;
const SLO = SERVE_WORKLOAD_JOB.serving.slo;

export const workloadCases = [
  {
    name: 'a seeded workload: the summary (percentiles, counts, KV-cache use) in wasm equals the native CLI\'s summary.json',
    async run({ engine, assert, native }) {
      const job = json(SERVE_WORKLOAD_JOB);
      const s = ok(assert, engine.inspect(job), 'inspect').summary;
      const inf = s.inference;
      assert.equal(inf.workload.requests, 300, 'the workload\'s 300 requests');
      for (const m of ['ttft', 'tpot', 'itl', 'e2e', 'queue']) {
        const [mean, p50, p90, p99] = ['mean', 'p50', 'p90', 'p99'].map((k) => inf[`${m}_seconds_${k}`]);
        assert.ok(p50 <= p90 && p90 <= p99, `${m}: P50 ${p50} <= P90 ${p90} <= P99 ${p99}`);
        assert.ok(Number.isFinite(mean) && mean >= 0, `${m} mean ${mean}`);
      }
      // TTFT = queue + the prefill: never below the queue, at every percentile.
      assert.ok(inf.ttft_seconds_p99 >= inf.queue_seconds_p99 && inf.ttft_seconds_p50 >= inf.queue_seconds_p50, 'TTFT >= queue time');
      // The same job string again (no rebuild) and after another job (a rebuild): the same document.
      assert.equal(JSON.stringify(ok(assert, engine.inspect(job), 'again').summary), JSON.stringify(s), 'same job, same summary');
      ok(assert, engine.inspect(json(SERVE_GQA)), 'another job');
      assert.equal(JSON.stringify(ok(assert, engine.inspect(job), 'rebuilt').summary), JSON.stringify(s), 'rebuilt, same summary');
      // Another seed draws other requests.
      const other = ok(assert, engine.inspect(json({ ...SERVE_WORKLOAD_JOB, serving: { ...SERVE_WORKLOAD_JOB.serving, workload: { ...SERVE_WORKLOAD_JOB.serving.workload, seed: 8 } } })), 'seed 8').summary.inference;
      assert.ok(other.ttft_seconds_p99 !== inf.ttft_seconds_p99 || other.workload.makespan_seconds !== inf.workload.makespan_seconds, 'seed 8 gives another run');
      if (!native.available) return `skip: ${native.reason}`;
      const files = await native.files('workload');
      assert.ok(files.has('summary.json'), `native wrote summary.json (${[...files.keys()].join(', ')})`);
      const nativeSummary = JSON.parse(new TextDecoder().decode(files.get('summary.json')));
      assert.equal(JSON.stringify(s), JSON.stringify(nativeSummary), 'summary.json (stagecraft generate) vs inspect() in wasm');
      return undefined;
    },
  },
  {
    name: 'capacity search: wasm servingCapacity equals the native `serve-capacity --json`',
    async run({ engine, assert, native }) {
      const cap = capacityOf(assert, engine, SERVE_WORKLOAD_JOB, { requests: 200 }, 'servingCapacity');
      if (!native.available) return `skip: ${native.reason}`;
      const files = await native.files('capacity');
      const nat = JSON.parse(new TextDecoder().decode(files.get('capacity.json')));
      assert.equal(nat.tp, 2, 'the CLI labels its layout: tp 2');
      assert.equal(nat.replicas, 1, 'one replica');
      delete nat.tp; delete nat.replicas;
      assert.equal(JSON.stringify(cap), JSON.stringify(nat), 'the capacity search, byte for byte');
      return undefined;
    },
  },
  {
    name: 'capacity search: the job\'s targets when none given, every point judged by its P99s, the curve at the documented multiples',
    run({ engine, assert }) {
      const cap = capacityOf(assert, engine, SERVE_WORKLOAD_JOB, { requests: 200 }, 'job targets');
      assert.equal(cap.slo.ttft_seconds_p99, SLO.ttft_seconds_p99, 'the job\'s P99 TTFT target');
      assert.equal(cap.slo.tpot_seconds_p99, SLO.tpot_seconds_p99, 'the job\'s P99 TPOT target');
      assert.equal(cap.requests_per_run, 200, '200 requests per run');
      assert.equal(cap.gpus, 2, 'tp 2: two GPUs');
      assert.ok(cap.capacity_requests_per_second > 0, `capacity ${cap.capacity_requests_per_second}`);
      assert.ok(Math.abs(cap.capacity_requests_per_second_per_gpu * 2 - cap.capacity_requests_per_second) <= 1e-8 * cap.capacity_requests_per_second, 'per GPU = capacity / 2');
      // The curve: 0.25, 0.5, 0.75, 0.9, 1, 1.1, 1.25, 1.5 x the capacity (docs/inference.md).
      const f = [0.25, 0.5, 0.75, 0.9, 1, 1.1, 1.25, 1.5];
      assert.equal(cap.curve.length, f.length, 'eight rates');
      cap.curve.forEach((c, i) => {
        assert.ok(Math.abs(c.requests_per_second / cap.capacity_requests_per_second - f[i]) < 1e-6, `point ${i} at ${f[i]} x the capacity`);
        const meets = c.ttft_seconds_p99 <= SLO.ttft_seconds_p99 && c.tpot_seconds_p99 <= SLO.tpot_seconds_p99;
        assert.equal(c.meets_slo, meets, `point ${i}: meets_slo iff both P99s are within the targets`);
        assert.ok(c.ttft_seconds_p50 <= c.ttft_seconds_p99 && c.tpot_seconds_p50 <= c.tpot_seconds_p99, `point ${i}: P50 <= P99`);
      });
      assert.equal(cap.curve[4].meets_slo, true, 'the capacity itself meets the targets');
      // Looser targets never lower the capacity; explicit targets replace the job's.
      const loose = capacityOf(assert, engine, SERVE_WORKLOAD_JOB, { requests: 200, ttft_seconds_p99: 1, tpot_seconds_p99: 0.1 }, 'loose');
      assert.equal(loose.slo.ttft_seconds_p99, 1, 'the given target');
      assert.ok(loose.capacity_requests_per_second >= cap.capacity_requests_per_second, `looser targets: ${loose.capacity_requests_per_second} >= ${cap.capacity_requests_per_second}`);
    },
  },
  {
    name: 'capacity search and workloads: bad arguments name their field; the memory of a run is checked before it runs (too_large, never an abort)',
    run({ engine, assert }) {
      const job = json(SERVE_WORKLOAD_JOB);
      assert.error(JSON.parse(engine.servingCapacity(job, '{')), 'parse_error', 'args', 'arguments that are not JSON');
      assert.error(JSON.parse(engine.servingCapacity(job, '[1]')), 'parse_error', 'args', 'arguments that are not an object');
      assert.error(JSON.parse(engine.servingCapacity(job, JSON.stringify({ ttft_seconds_p99: -1 }))), 'invalid_argument', 'ttft_seconds_p99', 'a negative target');
      assert.error(JSON.parse(engine.servingCapacity(job, JSON.stringify({ tpot_seconds_p99: 'fast' }))), 'invalid_argument', 'tpot_seconds_p99', 'a target that is not a number');
      assert.error(JSON.parse(engine.servingCapacity(job, JSON.stringify({ requests: 0.5 }))), 'invalid_argument', 'requests', 'a fraction of a request');
      assert.error(JSON.parse(engine.servingCapacity(json(SERVE_GQA), '{}')), 'invalid_argument', 'serving.slo.ttft_seconds_p99', 'no target given and none in the job');
      assert.error(JSON.parse(engine.servingCapacity(json({ ...SERVE_DIS, serving: { ...SERVE_DIS.serving, slo: SLO } }), '{}')), 'unsupported', 'serving.disaggregated', 'disaggregated pools');
      assert.error(JSON.parse(engine.servingCapacity(json({ model: { preset: 'gpt3-1.7b', num_layers: 2 }, training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 1 } }), JSON.stringify({ ttft_seconds_p99: 1 }))), 'invalid_argument', 'mode', 'a training job');
      // 200,000 requests of 1,000 output tokens per run: 2e8 inter-token
      // gaps (16 bytes each) = 3.2 GB, past the browser's 2 GiB budget:
      // refused before the first run (run, it would take minutes).
      const long = { ...SERVE_GQA, serving: { prompt_tokens: 1000, output_tokens: 1000, slo: SLO } };
      const big = JSON.parse(engine.servingCapacity(json(long), JSON.stringify({ requests: 200000 })));
      assert.error(big, 'too_large', 'serving.workload', 'a run past the budget');
      assert.match(big.error.message, /200000 requests, 200000000 output tokens/, 'the message gives the requests and tokens');
      // The same for a workload in the job itself (inspect builds it).
      const wl = { ...long, serving: { ...long.serving, workload: { arrival: 'burst', requests: 200000 } } };
      assert.error(JSON.parse(engine.inspect(json(wl))), 'too_large', 'serving.workload', 'a workload past the budget');
      // The module still answers.
      ok(assert, engine.servingCapacity(job, JSON.stringify({ requests: 50 })), 'after the refusals');
    },
  },
];

export const cases = [...cases0, ...workloadCases];
