// Every suite, in run order. Add a suite here to run it in Node and Chromium.
import * as basics from './basics.mjs';
import * as errors from './errors.mjs';
import * as traces from './traces.mjs';
import * as identity from './identity.mjs';
import * as explain from './explain.mjs';
import * as moe from './moe.mjs';
import * as wire from './wire.mjs';
import * as archive from './archive.mjs';
import * as hf from './hf.mjs';
import * as serving from './serving.mjs';
import * as plan from './plan.mjs';

export const suites = [basics, errors, traces, identity, explain, moe, wire, archive, hf, serving, plan];
