// version, inspect, graph, groups on a small valid job.
import { SMALL_JOB, json, findKey } from './jobs.mjs';

export const name = 'basics';

export const cases = [
  {
    name: 'version() is a semver string',
    run({ engine, assert }) {
      const v = engine.version();
      assert.type(v, 'string');
      assert.match(v, /^\d+\.\d+\.\d+/);
    },
  },
  {
    name: 'inspect() of a small job returns ok with world_size and parameters',
    run({ engine, assert }) {
      const r = JSON.parse(engine.inspect(json(SMALL_JOB)));
      assert.equal(r.ok, true, 'ok');
      assert.type(r.summary, 'object', 'summary');
      assert.equal(findKey(r.summary, (k) => k === 'world_size'), 4, 'summary world_size');
      const params = findKey(r.summary, (k, v) => /param/i.test(k) && typeof v === 'number');
      assert.ok(params > 0, `summary has a positive parameter count (got ${params})`);
    },
  },
  {
    name: 'graph() returns non-empty canonical text',
    run({ engine, assert }) {
      const r = JSON.parse(engine.graph(json(SMALL_JOB)));
      assert.equal(r.ok, true, 'ok');
      assert.type(r.text, 'string');
      assert.ok(r.text.length > 0, 'graph text is non-empty');
    },
  },
  {
    name: 'groups() returns the group file with ranks of the world',
    run({ engine, assert }) {
      const r = JSON.parse(engine.groups(json(SMALL_JOB)));
      assert.equal(r.ok, true, 'ok');
      assert.equal(r.worldSize, 4, 'worldSize');
      const table = JSON.parse(r.text);
      for (const [key, ranks] of Object.entries(table)) {
        assert.ok(Number(key) >= 1, `group key ${key} >= 1`);
        assert.ok(Array.isArray(ranks) && ranks.every((x) => x >= 0 && x < 4), `group ${key} ranks in [0,4)`);
      }
    },
  },
];
