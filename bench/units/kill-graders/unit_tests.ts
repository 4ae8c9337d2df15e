// The kill loop's coding rollouts are graded by the real unit_tests grader (bench/lib/kill-coding.ts).
export { default } from '../../../graders/unit_tests.js';
