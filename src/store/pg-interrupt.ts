// Closing calls a crashed process left running, on Postgres (a replica's boot, or another replica
// finding the call's replica gone): one statement, used by both.

/**
 * Closes the running calls `where` picks (a condition on `c`, the calls row; $1 is the record's
 * output, $2 the time, $3 the idempotent tools, later parameters the caller's). Their rollouts' rows
 * are locked first, as begin_call does (no lock-order deadlock with an admission); each rollout gets
 * back what its closed calls were charged; an idempotent tool's call is un-begun (its retry runs it),
 * the others become 'interrupted' (never run again). Yields one row, `interrupted`: how many.
 */
export function closeRunningSql(schema: string, where: string): string {
  return `WITH picked AS (SELECT c.trace_id, c.call_id FROM ${schema}.calls c WHERE c.status = 'running' AND ${where}),
    r AS (SELECT trace_id FROM ${schema}.rollouts WHERE trace_id IN (SELECT trace_id FROM picked) ORDER BY trace_id FOR UPDATE),
    run AS (SELECT c.trace_id, c.call_id, c.cost, c.tool = ANY($3::text[]) AS rerun
            FROM ${schema}.calls c JOIN r ON r.trace_id = c.trace_id JOIN picked p ON p.trace_id = c.trace_id AND p.call_id = c.call_id
            WHERE c.status = 'running' FOR UPDATE OF c),
    dropped AS (DELETE FROM ${schema}.calls c USING run WHERE run.rerun AND c.trace_id = run.trace_id AND c.call_id = run.call_id RETURNING 1),
    cut AS (UPDATE ${schema}.calls c SET status = 'interrupted', output = $1, finished_at = $2, cost = 0 FROM run
            WHERE NOT run.rerun AND c.trace_id = run.trace_id AND c.call_id = run.call_id RETURNING 1),
    refunded AS (UPDATE ${schema}.rollouts o SET budget_used = o.budget_used - t.cost, call_count = o.call_count - t.dropped, updated_at = $2
                 FROM (SELECT trace_id, sum(cost) AS cost, count(*) FILTER (WHERE rerun) AS dropped FROM run GROUP BY trace_id) t
                 WHERE o.trace_id = t.trace_id RETURNING 1)
    SELECT (SELECT count(*) FROM cut)::int AS interrupted, (SELECT count(*) FROM dropped)::int AS dropped, (SELECT count(*) FROM refunded)::int AS refunded`;
}
