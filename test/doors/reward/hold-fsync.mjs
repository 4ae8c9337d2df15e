// Preloaded (node --import) into a server that durability.test.ts kills: while the file named by
// RFT_TEST_HOLD_FSYNC exists, an fdatasync never ends (a disk whose flush never returns), so a reply
// that waits for one never comes. The server's own code is not changed: node:fs's export is replaced.
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

const gate = process.env.RFT_TEST_HOLD_FSYNC;
const fdatasync = fs.fdatasync;
fs.fdatasync = (fd, cb) => {
  if (gate && fs.existsSync(gate)) return; // held for good
  fdatasync(fd, cb);
};
syncBuiltinESMExports();
