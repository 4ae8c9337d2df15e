// The scripted model ships in the package (src/cli/models/scripted-server.ts, used by
// `rollout --model scripted:FILE`); tests and benches use that very server.
export * from '../../src/cli/models/scripted-server.js';
