// What a command leaves running (background jobs, `setsid` daemons, double forks) is told apart from
// everything else of the sandbox uid (a spawned MCP server, another exec) by making the program that
// runs the command a child subreaper (prctl PR_SET_CHILD_SUBREAPER): orphans of the command are
// re-parented to it instead of to init, so they stay in its tree and go with it. perl reaches prctl
// by number without a compiler and is in every Debian system (perl-base is essential).
import { existsSync } from 'node:fs';

/** Perl: makes this process a child subreaper (x86_64 and arm64 numbers; elsewhere, and on gVisor, it stays a no-op). */
export const PERL_SUBREAPER =
  'my %nr = (x86_64 => 157, aarch64 => 167, riscv64 => 167); require Config; my ($a) = $Config::Config{archname} =~ /^([^-]+)/; ' +
  'syscall($nr{$a}, 36, 1, 0, 0, 0) if $nr{$a};';

/**
 * Perl, run as `perl -e REAP -- argv...`: a subreaper that runs argv, waits for it, then stops and
 * kills every process still below it (walked by /proc/PID/task/TID/children, pass by pass so nothing
 * forks behind the walk), and ends as argv did (its exit code, or the same signal).
 * It makes itself non-dumpable first (prctl PR_SET_DUMPABLE 0): it runs as the command's uid and holds
 * the command's descriptors (the grader's runner gets the hidden tests on them), so otherwise the code
 * under test could attach to it (ptrace, process_vm_readv, pidfd_getfd, /proc/PID/mem) and take them.
 * argv's execve makes the command dumpable again, as it was without the reaper.
 */
const REAP = `${PERL_SUBREAPER}
syscall($nr{$a}, 4, 0, 0, 0, 0) if $nr{$a};
my $pid = fork;
if (!$pid) { exec { $ARGV[0] } @ARGV; print STDERR "failed to execute $ARGV[0]: $!\\n"; exit 127 }
waitpid($pid, 0); my $st = $?; my %set; my @todo = ($$);
while (defined(my $p = shift @todo)) {
  for my $t (glob "/proc/$p/task/*/children") {
    open(my $fh, '<', $t) or next; my @c = split ' ', (<$fh> // ''); close $fh;
    for (grep { !$set{$_} } @c) { kill 'STOP', $_; $set{$_} = 1; push @todo, $_ }
  }
}
kill 'KILL', keys %set if %set; 1 while waitpid(-1, 1) > 0;
if ($st & 127) { kill $st & 127, $$; exit 128 + ($st & 127) } exit $st >> 8;`;

const PERL = '/usr/bin/perl';
let present: boolean | undefined;

/** The argv prefix that runs a host command under the reaper; empty where the host has no perl (leftovers then stay as before). */
export function reaperPrefix(): string[] {
  present ??= existsSync(PERL);
  return present ? [PERL, '-e', REAP, '--'] : [];
}
