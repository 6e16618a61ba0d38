// The planner through the bridge (docs/plan.md, docs/wasm-bridge.md "plan")
// and the Plan tab's pure helpers (web/src/lib/plan.js): Pareto front and
// sort orders on a hand-made set whose answers were worked out by hand
// (plan-fixture.mjs), a real plan with progress reports, and cancelling a
// plan by terminating its worker, then planning again in a fresh one.
import { paretoFront, sortCandidates, layoutText, layoutOfJob, gapText, secondsText, remainingSeconds, alternativesText } from '../../../web/src/lib/plan.js';
import { PLAN_FIXTURE, PLAN_FRONT_RANKS, PLAN_SORTS } from './plan-fixture.mjs';
import { json } from './jobs.mjs';

export const name = 'plan';

// A small base job: 2 layers of GPT-3 1.7B, batch 8 of 256 tokens.
const PLAN_JOB = { model: { preset: 'gpt3-1.7b', num_layers: 2 }, training: { seq_len: 256, global_batch_size: 8 } };
// A bigger space (more GPUs and layers) for the cancel case, so that
// progress is reported well before the end.
const BIG_JOB = { model: { preset: 'gpt3-1.7b', num_layers: 8 }, training: { seq_len: 1024, global_batch_size: 64 } };

// A mid-size space (about 2 s in wasm, 16 GPUs): the best so far is
// reported more than once before the end.
const MID_JOB = { model: { preset: 'gpt3-1.7b', num_layers: 4 }, training: { seq_len: 1024, global_batch_size: 32 } };

const product = (l) => l.tp * l.cp * l.pp * l.dp;

export const cases = [
  {
    name: 'Pareto front of step time and memory on a hand-made set equals the hand-derived one',
    run({ assert }) {
      const pts = PLAN_FIXTURE.candidates.map((c) => ({ step: c.step_seconds, mem: c.peak_memory_bytes }));
      const on = paretoFront(pts);
      const ranks = PLAN_FIXTURE.candidates.filter((_, i) => on[i]).map((c) => c.rank);
      assert.equal(JSON.stringify(ranks), JSON.stringify(PLAN_FRONT_RANKS), 'front');
      // Input order does not matter: reversed input, same front.
      const rev = paretoFront([...pts].reverse()).reverse();
      assert.equal(JSON.stringify(rev), JSON.stringify(on), 'front of the reversed input');
      // Small cases by hand: one point; two incomparable; one dominating.
      assert.equal(JSON.stringify(paretoFront([{ step: 1, mem: 1 }])), '[true]', 'single point');
      assert.equal(JSON.stringify(paretoFront([{ step: 1, mem: 2 }, { step: 2, mem: 1 }])), '[true,true]', 'trade-off');
      assert.equal(JSON.stringify(paretoFront([{ step: 2, mem: 2 }, { step: 1, mem: 1 }])), '[false,true]', 'dominated');
      assert.equal(JSON.stringify(paretoFront([])), '[]', 'empty');
    },
  },
  {
    name: 'table sort orders equal the hand-derived ones; ties keep the plan rank',
    run({ assert }) {
      for (const [k, want] of Object.entries(PLAN_SORTS)) {
        const [key, dir] = k.split(' ');
        const got = sortCandidates(PLAN_FIXTURE.candidates, key, dir).map((c) => c.rank);
        assert.equal(JSON.stringify(got), JSON.stringify(want), k);
      }
      // Sorting a shuffled table gives the same order (stable by rank).
      const shuffled = [5, 2, 8, 1, 7, 3, 6, 4].map((r) => PLAN_FIXTURE.candidates[r - 1]);
      assert.equal(JSON.stringify(sortCandidates(shuffled, 'memory', 'asc').map((c) => c.rank)), JSON.stringify(PLAN_SORTS['memory asc']), 'shuffled');
      assert.equal(JSON.stringify(sortCandidates(shuffled, 'rank').map((c) => c.rank)), '[1,2,3,4,5,6,7,8]', 'back to rank order');
      assert.equal(layoutText(PLAN_FIXTURE.candidates[3].layout), 'tp 2 + sp · dp 4 · ZeRO 1 · mbs 1', 'layout text');
      const hsdp = { ...PLAN_FIXTURE.candidates[3].layout, dp: 8, zero: 3, shard_group: 4, order: ['tp', 'cp', 'pp', 'dp'] };
      assert.equal(layoutText(hsdp), 'tp 2 + sp · dp 8 · ZeRO 3 (HSDP, shard 4) · mbs 1 · order llama3', 'HSDP and Llama 3 order');
      // The two uneven pipeline splits (docs/plan.md, step 1) named apart.
      const pipe = { ...PLAN_FIXTURE.candidates[3].layout, pp: 8, vp: 8, schedule: 'interleaved-1f1b', dp: 1 };
      assert.equal(layoutText({ ...pipe, empty_end_chunks: true }),
        'tp 2 + sp · pp 8 × v 8 (interleaved-1f1b) · embedding/loss-only end chunks · dp 1 · ZeRO 1 · mbs 1', 'embedding/loss-only ends');
      assert.equal(layoutText({ ...pipe, embedding_loss_in_split: true }),
        'tp 2 + sp · pp 8 × v 8 (interleaved-1f1b) · embedding + loss counted in the split · dp 1 · ZeRO 1 · mbs 1', 'counted in the split');
    },
  },
  {
    name: 'plan() over the bridge: ranked candidates with full jobs, counts, progress reported',
    run({ engine, assert }) {
      assert.type(engine.plan, 'function', 'engine.plan (wasm/bridge.cc)');
      const progress = [];
      const r = JSON.parse(engine.plan(json(PLAN_JOB), JSON.stringify({ gpus: 4, constraints: {} }),
        (done, total, phase) => progress.push({ done, total, phase })));
      assert.equal(r.ok, true, `ok (${JSON.stringify(r.error)})`);
      const plan = r.plan;
      assert.equal(plan.gpus, 4, 'gpus');
      assert.ok(plan.candidates.length > 0, 'some layout fits 2 layers of 1.7B on 4 GPUs');
      // Every candidate uses the 4 GPUs, is ranked by step time, and its job
      // is a valid job of that layout on 4 ranks.
      let prev = 0;
      for (const [i, c] of plan.candidates.entries()) {
        assert.equal(c.rank, i + 1, 'ranks count from 1 in order');
        assert.equal(product(c.layout), 4, `tp·cp·pp·dp of #${c.rank}`);
        assert.ok(c.step_seconds >= prev, `#${c.rank} not faster than #${c.rank - 1}`);
        prev = c.step_seconds;
        assert.ok(c.peak_memory_bytes > 0 && c.peak_memory_bytes <= c.memory_capacity_bytes, `#${c.rank} fits`);
        const l = layoutOfJob(c.job);
        for (const k of ['tp', 'pp', 'dp', 'cp', 'micro_batch_size']) assert.equal(l[k], c.layout[k], `#${c.rank} job ${k}`);
        const s = JSON.parse(engine.inspect(json(c.job)));
        assert.equal(s.ok, true, `#${c.rank} job inspects (${JSON.stringify(s.error)})`);
        assert.equal(s.summary.world_size, 4, `#${c.rank} world size`);
      }
      // tokens/s is the batch's tokens over the step time (8 × 256 tokens).
      const c0 = plan.candidates[0];
      assert.ok(Math.abs(c0.tokens_per_second * c0.step_seconds - 8 * 256) < 1e-6 * 8 * 256, 'tokens/s × step = tokens per step');
      // docs/plan.md: considered = divisibility + memory + dominated + bound + simulated.
      const rej = plan.counts.rejected;
      assert.equal(plan.counts.considered, rej.divisibility + rej.memory + rej.dominated + rej.bound + plan.counts.simulated, 'counts add up');
      assert.ok(plan.counts.simulated >= plan.candidates.length, 'every ranked layout was simulated');
      assert.equal(plan.complete, true, 'complete');
      // The winner's times are the simulator's for its job (simulate() of
      // the same job answers the same step time).
      if (typeof engine.simulate === 'function') {
        const sim = JSON.parse(engine.simulate(json(c0.job), '{"timeline":false}'));
        assert.equal(sim.ok, true, `simulate the winner (${JSON.stringify(sim.error)})`);
        assert.ok(Math.abs(sim.simulation.step_seconds - c0.step_seconds) <= 1e-9 * c0.step_seconds, `winner step ${c0.step_seconds} = simulate ${sim.simulation.step_seconds}`);
      }
      // Progress: at least one report; done never above total.
      assert.ok(progress.length > 0, 'progress reported');
      for (const p of progress) {
        assert.ok(p.done >= 0 && p.done <= p.total, `progress ${JSON.stringify(p)}`);
        assert.type(p.phase, 'string', 'phase');
      }
      // Bad arguments are errors with a path, not aborts.
      assert.error(JSON.parse(engine.plan(json(PLAN_JOB), JSON.stringify({ gpus: 0 }), () => {})), 'invalid_argument', 'gpus');
      assert.error(JSON.parse(engine.plan(json(PLAN_JOB), '{not json', () => {})), 'parse_error', 'args');
    },
  },
  {
    name: 'gap, seconds and estimate helpers: ties, sensible precision, hand-worked values',
    run({ assert }) {
      // Equal steps (and float noise below 1e-9 of a step) tie.
      assert.equal(gapText(1.5, 1.5), 'ties', 'equal');
      assert.equal(gapText(1.5, 1.5 * (1 + 1e-12)), 'ties', 'float noise');
      // 2.000 s vs 2.010 s: 0.01 / 2.01 = 0.4975 % (two significant digits), 10 ms.
      assert.equal(gapText(2, 2.01), '0.50 % (10.0 ms)', '0.5 %');
      // 1 s vs 1.25 s: 0.25 / 1.25 = 20 %, 250 ms.
      assert.equal(gapText(1, 1.25), '20.0 % (250 ms)', '20 %');
      // The "0.000 s" case: 4e-5 s on 1.0 s = 0.0039999 %, 40 µs.
      assert.equal(gapText(1, 1.00004), '0.0040 % (40.0 µs)', 'under half a millisecond');
      assert.equal(secondsText(12.345), '12.3 s', 's');
      assert.equal(secondsText(0.0015), '1.50 ms', 'ms');
      // 30 of 120 done in 10 s: 90 left at 3 per s = 30 s.
      assert.equal(remainingSeconds(30, 120, 10), 30, 'rate estimate');
      assert.equal(remainingSeconds(0, 120, 10), null, 'nothing done yet: no estimate');
      assert.equal(remainingSeconds(120, 120, 10), null, 'done: no estimate');
      assert.equal(alternativesText({ alternatives: [{ recompute: 'selective' }] }), 'same step with recompute selective', 'alternatives');
      assert.equal(alternativesText({}), '', 'none');
    },
  },
  {
    name: 'plan() streams the best so far: partial plans before the answer, counts monotone and adding up, totals that do not shrink',
    run({ engine, assert }) {
      const partials = [], progress = [];
      const r = JSON.parse(engine.plan(json(MID_JOB), JSON.stringify({ gpus: 16, constraints: { top: 5 } }),
        (done, total, phase) => progress.push({ done, total, phase }), (text) => partials.push(JSON.parse(text))));
      assert.equal(r.ok, true, `ok (${JSON.stringify(r.error)})`);
      const plan = r.plan;
      assert.equal(plan.complete, true, 'the search ran to its end');
      assert.ok(partials.length >= 1, `at least one best so far before the answer (${partials.length})`);
      let prevSim = 0, prevBound = 0;
      for (const [i, p] of partials.entries()) {
        assert.equal(p.complete, false, `partial ${i} is marked incomplete`);
        assert.equal(p.counts.considered, plan.counts.considered, `partial ${i}: the same layouts considered`);
        const rej = p.counts.rejected;
        // Every layout is in exactly one count (docs/plan.md), unexamined included.
        assert.equal(p.counts.considered, rej.divisibility + rej.memory + rej.dominated + rej.bound + p.counts.simulated + (p.counts.unexamined ?? 0), `partial ${i}: counts add up`);
        assert.ok(p.counts.simulated >= prevSim && p.counts.simulated <= plan.counts.simulated, `partial ${i}: simulated ${p.counts.simulated} after ${prevSim}, final ${plan.counts.simulated}`);
        assert.ok(rej.bound >= prevBound, `partial ${i}: cut by the bound only grows (${rej.bound} after ${prevBound})`);
        prevSim = p.counts.simulated; prevBound = rej.bound;
        assert.ok(p.candidates.length >= 1 && p.candidates.length <= 5, `partial ${i}: 1 to top rows`);
        for (let k = 1; k < p.candidates.length; k++) assert.ok(p.candidates[k].step_seconds >= p.candidates[k - 1].step_seconds, `partial ${i}: ranked`);
        // The best so far is never better than the final best (the final
        // one is the minimum over more simulated layouts).
        assert.ok(p.candidates[0].step_seconds >= plan.candidates[0].step_seconds, `partial ${i}: #1 not faster than the final #1`);
      }
      // Progress: within a phase the total is fixed and done never falls.
      const by = {};
      for (const p of progress) {
        const q = by[p.phase];
        if (q) {
          assert.equal(p.total, q.total, `${p.phase}: total does not change (${q.total} → ${p.total})`);
          assert.ok(p.done >= q.done, `${p.phase}: done does not fall (${q.done} → ${p.done})`);
        }
        by[p.phase] = p;
      }
      assert.ok(by.simulate, 'the simulate phase reported progress');
    },
  },
  {
    name: 'plan request: time_limit_seconds stops the search with the best so far; seq_len and global_batch_size are required',
    run({ engine, assert }) {
      // A limit far below one simulation: the search stops, and says so.
      const r = JSON.parse(engine.plan(json(BIG_JOB), JSON.stringify({ gpus: 64, time_limit_seconds: 1e-6 }), () => {}));
      assert.equal(r.ok, true, `ok (${JSON.stringify(r.error)})`);
      assert.equal(r.plan.complete, false, 'stopped early');
      assert.ok(/nothing simulated yet|#1|beats|ties|fits/.test(r.plan.why_winner), `why: ${r.plan.why_winner}`);
      assert.ok(!/^no layout fits$/.test(r.plan.why_winner), 'never "no layout fits" for a stopped search');
      for (const bad of [0, -1, 'x', 2e6]) {
        assert.error(JSON.parse(engine.plan(json(BIG_JOB), JSON.stringify({ gpus: 64, time_limit_seconds: bad }), () => {})), 'invalid_argument', 'time_limit_seconds');
      }
      const noSeq = { model: PLAN_JOB.model, training: { global_batch_size: 8 } };
      assert.error(JSON.parse(engine.plan(json(noSeq), JSON.stringify({ gpus: 4 }), () => {})), 'invalid_argument', 'training.seq_len');
      const noBatch = { model: PLAN_JOB.model, training: { seq_len: 256 } };
      assert.error(JSON.parse(engine.plan(json(noBatch), JSON.stringify({ gpus: 4 }), () => {})), 'invalid_argument', 'training.global_batch_size');
    },
  },
  {
    name: 'cancel: a plan worker terminated mid-run, then a fresh worker plans to the end',
    async run({ spawnWorker, assert }) {
      const start = (job, gpus) => {
        const w = spawnWorker();
        const inbox = [];
        let wake = null;
        w.onMessage((m) => { inbox.push(m); wake?.(); });
        w.onError((e) => { inbox.push({ error: String(e) }); wake?.(); });
        const next = async () => {
          while (!inbox.length) await new Promise((r) => { wake = r; });
          return inbox.shift();
        };
        return { w, next, send: () => w.post({ job: json(job), args: JSON.stringify({ gpus, constraints: {} }) }) };
      };
      const a = start(BIG_JOB, 64);
      assert.equal((await a.next()).ready, true, 'worker A ready');
      a.send();
      const first = await a.next();
      assert.ok(first.progress, `first message is progress: ${JSON.stringify(first)}`);
      // The run had not finished when this report was posted.
      assert.ok(first.progress.done < first.progress.total, `mid-run: ${JSON.stringify(first.progress)}`);
      await a.w.terminate();
      const b = start(PLAN_JOB, 4);
      assert.equal((await b.next()).ready, true, 'worker B ready');
      b.send();
      let m;
      do m = await b.next(); while (m.progress);
      b.w.terminate();
      assert.ok(m.reply && m.reply.ok === true, `the new run answers: ${JSON.stringify(m).slice(0, 200)}`);
      assert.ok(m.reply.plan.candidates.length > 0, 'with candidates');
    },
  },
];
