// Bad input comes back as {ok:false,error:{code,message,path}} and never
// aborts the module: every bad request is followed by a good one.
import { SMALL_JOB, MOE_JOB, json, withPatch } from './jobs.mjs';

export const name = 'errors';

function stillAlive(engine, assert) {
  const r = JSON.parse(engine.inspect(json(SMALL_JOB)));
  assert.equal(r.ok, true, 'a good request after a bad one still works');
}

export const cases = [
  {
    name: 'malformed JSON -> parse_error',
    run({ engine, assert }) {
      for (const text of ['{"model": ', '', 'not json', '[1,2', '{"model":{"preset":"gpt3-1.7b"}} trailing']) {
        const r = JSON.parse(engine.inspect(text));
        assert.error(r, 'parse_error', undefined, `inspect(${JSON.stringify(text)})`);
        stillAlive(engine, assert);
      }
    },
  },
  {
    name: 'tp not dividing the heads -> not_divisible at parallel.tp',
    run({ engine, assert }) {
      const r = JSON.parse(engine.inspect(json(withPatch(SMALL_JOB, { parallel: { tp: 7 } }))));
      assert.error(r, 'not_divisible', 'parallel.tp');
      stillAlive(engine, assert);
    },
  },
  {
    name: 'unknown key -> unknown_field naming the full path',
    run({ engine, assert }) {
      const r = JSON.parse(engine.inspect(json(withPatch(SMALL_JOB, { parallel: { bogus: 3 } }))));
      assert.error(r, 'unknown_field', 'parallel.bogus');
      const r2 = JSON.parse(engine.inspect(json({ ...SMALL_JOB, extra: true })));
      assert.error(r2, 'unknown_field', 'extra');
      stillAlive(engine, assert);
    },
  },
  {
    name: 'expert parallelism on a dense model -> invalid_argument at parallel.ep',
    run({ engine, assert }) {
      const r = JSON.parse(engine.inspect(json(withPatch(SMALL_JOB, { parallel: { ep: 2 } }))));
      assert.error(r, 'invalid_argument', 'parallel.ep');
      assert.match(r.error.message, /num_experts/, 'the message says why (no experts)');
      assert.error(engine.rankTrace(json(withPatch(SMALL_JOB, { parallel: { ep: 2 } })), 0), 'invalid_argument', 'parallel.ep', 'rankTrace');
      stillAlive(engine, assert);
    },
  },
  {
    name: 'MoE and HSDP misfits name their field',
    run({ engine, assert }) {
      // expert_tp x ep must divide the tp x cp x dp ranks of a stage (8).
      assert.error(JSON.parse(engine.inspect(json(withPatch(MOE_JOB, { parallel: { ep: 8, expert_tp: 2 } })))), 'not_divisible', 'parallel.ep', 'etp x ep > stage ranks');
      // Experts split evenly over ep: 8 experts, ep 3 (stage of 6 ranks).
      assert.error(JSON.parse(engine.inspect(json(withPatch(MOE_JOB, { parallel: { dp: 3, ep: 3 }, training: { global_batch_size: 3 } })))), 'not_divisible', 'parallel.ep', 'E % ep');
      // A MoE setting on a dense model.
      assert.error(JSON.parse(engine.inspect(json(withPatch(SMALL_JOB, { model: { preset: 'gpt3-1.7b', num_layers: 2, experts_per_token: 2 } })))), 'invalid_argument', 'model.experts_per_token', 'k without E');
      // A sharding group needs ZeRO.
      assert.error(JSON.parse(engine.inspect(json(withPatch(SMALL_JOB, { parallel: { shard_group: 1 } })))), 'invalid_argument', 'parallel.shard_group', 'shard_group without zero');
      stillAlive(engine, assert);
    },
  },
  {
    name: 'every bridge function reports errors as values',
    run({ engine, assert }) {
      const bad = '{"model": ';
      assert.error(JSON.parse(engine.graph(bad)), 'parse_error', undefined, 'graph');
      assert.error(JSON.parse(engine.groups(bad)), 'parse_error', undefined, 'groups');
      assert.error(engine.rankTrace(bad, 0), 'parse_error', undefined, 'rankTrace');
      const bad_tp = json(withPatch(SMALL_JOB, { parallel: { tp: 7 } }));
      assert.error(engine.rankTrace(bad_tp, 0), 'not_divisible', 'parallel.tp', 'rankTrace');
      stillAlive(engine, assert);
    },
  },
  {
    name: 'rankTrace() rejects ranks outside the world',
    run({ engine, assert }) {
      for (const rank of [-1, 4, 1.5, 1e12, NaN]) {
        assert.error(engine.rankTrace(json(SMALL_JOB), rank), 'invalid_argument', 'rank', `rank ${rank}`);
      }
      assert.equal(engine.rankTrace(json(SMALL_JOB), 3).ok, true, 'rank 3 after bad ranks');
      // A value of another type is refused, not coerced (null was rank 0, true rank 1, '3' rank 3).
      for (const rank of [null, true, false, '3', [3], {}]) {
        assert.error(engine.rankTrace(json(SMALL_JOB), rank), 'invalid_argument', 'rank', `rank ${JSON.stringify(rank)}`);
      }
      if (typeof engine.graphJson === 'function')
        for (const stage of [null, '0']) assert.error(JSON.parse(engine.graphJson(json(SMALL_JOB), stage)), 'invalid_argument', 'stage', `stage ${JSON.stringify(stage)}`);
      stillAlive(engine, assert);
    },
  },
  {
    name: 'argument text nested 10,000 deep is refused, again and again, and the module lives',
    run({ engine, assert }) {
      if (typeof engine.plan !== 'function') return;
      const deep = '['.repeat(10000) + ']'.repeat(10000);
      const planJob = json({ model: { preset: 'gpt3-1.7b', num_layers: 2 }, training: { seq_len: 256, global_batch_size: 8 } });
      // 44 such calls corrupted the module's stack before arguments were depth-checked.
      for (let i = 0; i < 60; i++) {
        assert.error(JSON.parse(engine.plan(planJob, `{"gpus":4,"x":${deep}}`, undefined)), 'parse_error', 'args', `plan ${i}`);
      }
      assert.error(JSON.parse(engine.plan(planJob, JSON.stringify({ gpus: 4, constraints: deep }), undefined)), 'invalid_argument', 'constraints');
      assert.equal(engine.rankTrace(json(SMALL_JOB), 3).ok, true, 'a trace after deep arguments');
      stillAlive(engine, assert);
    },
  },
  {
    name: 'a plan callback that throws stops the plan with an error naming it, and the module lives',
    run({ engine, assert }) {
      if (typeof engine.plan !== 'function') return;
      const planJob = json({ model: { preset: 'gpt3-1.7b', num_layers: 2 }, training: { seq_len: 256, global_batch_size: 8 } });
      // ~380 such calls killed the module when the exception unwound through it.
      for (let i = 0; i < 50; i++) {
        const r = JSON.parse(engine.plan(planJob, '{"gpus":4}', () => { throw new Error('boom'); }));
        assert.error(r, 'cancelled', 'onProgress', `throwing onProgress ${i}`);
        assert.ok(r.error.message.includes('boom'), `the message names the exception: ${r.error.message}`);
      }
      const thrown = JSON.parse(engine.plan(planJob, '{"gpus":4}', undefined, () => { throw 'partial'; }));
      assert.error(thrown, 'cancelled', 'onPartial', 'throwing onPartial');
      const r = JSON.parse(engine.plan(planJob, '{"gpus":4}', () => {}));
      assert.equal(r.ok, true, `a plan after throwing callbacks (${JSON.stringify(r.error)})`);
      stillAlive(engine, assert);
    },
  },
];
