export { default } from '../../../tools/apply_patch.js';
