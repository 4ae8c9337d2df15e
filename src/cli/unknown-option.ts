// A mistyped option named as such. Commander checks required options before unknown ones, so
// `rollout --datset x` said "--dataset not specified"; this finds the unknown option behind that error.
import { CommanderError, type Command } from 'commander';

/**
 * The first option of `argv` (user arguments) that the command it reaches does not know, as commander's
 * own error (with its "Did you mean" suggestion), or undefined. Commander checks the required options
 * first, so a typo such as `--datset` would otherwise be reported as `--dataset` missing.
 */
export function unknownOptionError(root: Command, argv: string[]): CommanderError | undefined {
  let cmd = root;
  let args = argv;
  for (;;) {
    const { operands, unknown } = cmd.parseOptions(args);
    const sub = operands[0] === undefined ? undefined : cmd.commands.find((c) => c.name() === operands[0] || c.aliases().includes(operands[0]!));
    if (sub) {
      [cmd, args] = [sub, [...operands.slice(1), ...unknown]];
      continue;
    }
    const flag = unknown.find((a) => a.startsWith('-'));
    if (flag === undefined) return undefined;
    // Its own "(add --help for usage)" was printed with the first error already.
    cmd.showHelpAfterError(false);
    try {
      // Commander's private unknownOption builds the message and the suggestion; with exitOverride it throws.
      (cmd as unknown as { unknownOption(flag: string): void }).unknownOption(flag.split('=')[0]!);
    } catch (e) {
      if (e instanceof CommanderError) return e;
      throw e;
    }
    return undefined;
  }
}
