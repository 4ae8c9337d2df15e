// The doors served on the private listener (./app.ts), for trainers whose clients send no credential.
// Adding one: its folder under src/doors/ exports a PrivateDoor, and one line here.
import type { PrivateDoor } from './door.js';
import { openEnvDoor } from '../openenv/index.js';
import { rewardDoor } from '../reward/door.js';
import { sandboxFusionDoor } from '../sandbox-fusion/door.js';

export type { PrivateDoor, PrivateDoorContext } from './door.js';

export const privateDoors: PrivateDoor[] = [
  openEnvDoor,
  rewardDoor,
  sandboxFusionDoor,
];
