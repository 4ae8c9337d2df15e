export { default } from '../../../tools/write_file.js';
