// The kill loop's coding rollouts use the real coding tools (see bench/lib/kill-coding.ts).
export { default } from '../../../tools/shell.js';
