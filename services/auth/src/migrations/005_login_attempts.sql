-- The login limiter's state (issue 31, D9), kept here so that every auth replica counts the same failures and
-- holds the same delays: in each replica's memory, two replicas doubled every bound and split every delay.
-- Times are milliseconds since the epoch on the calling replica's clock (tests move it); rows expire at reset_at
-- and are pruned (login-attempt.repository.ts).

-- Failures of one email from all addresses, or of one address across all emails, in a window from its first one.
CREATE TABLE login_failure_windows (
  scope    text NOT NULL CHECK (scope IN ('email', 'address')),
  subject  text NOT NULL,
  failures integer NOT NULL,
  reset_at bigint NOT NULL,
  PRIMARY KEY (scope, subject)
);
CREATE INDEX login_failure_windows_reset_idx ON login_failure_windows (reset_at);

-- One (email, address): its failures, when it may try next, and when it is forgotten.
CREATE TABLE login_pairs (
  email         text NOT NULL,
  address       text NOT NULL,
  failures      integer NOT NULL,
  next_at       bigint NOT NULL,
  reset_at      bigint NOT NULL,
  -- The attempt that set next_at and reset_at, and their values before it (NULL: none), put back if that attempt
  -- is abandoned.
  attempt       uuid,
  prev_next_at  bigint,
  prev_reset_at bigint,
  prev_attempt  uuid,
  PRIMARY KEY (email, address)
);
CREATE INDEX login_pairs_reset_idx ON login_pairs (reset_at);

-- Admits one attempt of (email, address) in one round trip, or refuses it while the pair must wait (wait_ms > 0;
-- nothing is counted then). Admitted, it counts as a failure of the pair, the address and the email from the
-- start: a burst in parallel gets no more tries than one after another. over_bound_ms: how long the address's or
-- the email's window still runs if it was already past its bound (else 0). email_window / address_window name the
-- windows counted, so that settling uncounts only those (a window that has rolled over since is another one).
-- Rows are locked in one order (pair, address, email) by every caller: concurrent attempts cannot deadlock.
CREATE FUNCTION login_attempt_begin(
  p_email text, p_address text, p_attempt uuid, p_now bigint, p_window_ms bigint,
  p_free integer, p_max_delay_ms bigint, p_max_per_email integer, p_max_per_address integer,
  OUT wait_ms bigint, OUT over_bound_ms bigint, OUT email_window bigint, OUT address_window bigint
) AS $$
#variable_conflict use_column
DECLARE
  pair login_pairs%ROWTYPE;
  live boolean;
  n integer;
  delay bigint;
BEGIN
  LOOP
    SELECT * INTO pair FROM login_pairs WHERE email = p_email AND address = p_address FOR UPDATE;
    EXIT WHEN FOUND;
    -- A row to lock, even for a pair never seen (expired at once); another attempt inserting it first is waited for.
    INSERT INTO login_pairs (email, address, failures, next_at, reset_at) VALUES (p_email, p_address, 0, 0, 0)
      ON CONFLICT (email, address) DO NOTHING;
  END LOOP;
  live := pair.reset_at > p_now;
  IF live AND pair.next_at > p_now THEN
    wait_ms := pair.next_at - p_now;
    over_bound_ms := 0;
    RETURN;
  END IF;
  wait_ms := 0;

  INSERT INTO login_failure_windows AS w (scope, subject, failures, reset_at) VALUES ('address', p_address, 1, p_now + p_window_ms)
    ON CONFLICT (scope, subject) DO UPDATE SET
      failures = CASE WHEN w.reset_at > p_now THEN w.failures + 1 ELSE 1 END,
      reset_at = CASE WHEN w.reset_at > p_now THEN w.reset_at ELSE p_now + p_window_ms END
    RETURNING w.failures, w.reset_at INTO n, address_window;
  -- The count before this attempt: past the bound already?
  over_bound_ms := CASE WHEN n - 1 >= p_max_per_address THEN address_window - p_now ELSE 0 END;

  INSERT INTO login_failure_windows AS w (scope, subject, failures, reset_at) VALUES ('email', p_email, 1, p_now + p_window_ms)
    ON CONFLICT (scope, subject) DO UPDATE SET
      failures = CASE WHEN w.reset_at > p_now THEN w.failures + 1 ELSE 1 END,
      reset_at = CASE WHEN w.reset_at > p_now THEN w.reset_at ELSE p_now + p_window_ms END
    RETURNING w.failures, w.reset_at INTO n, email_window;
  IF n - 1 >= p_max_per_email THEN over_bound_ms := greatest(over_bound_ms, email_window - p_now); END IF;

  n := CASE WHEN live THEN pair.failures + 1 ELSE 1 END;
  delay := CASE WHEN n >= p_free THEN least(p_max_delay_ms, (1000 * power(2, least(30, n - p_free)))::bigint) ELSE 0 END;
  -- Forgotten only after a quiet window once the delay is over: waiting out the longest delay earns no fresh free tries.
  -- No delay is no next_at (0): an attempt whose replica read its clock a moment earlier is not refused.
  UPDATE login_pairs SET
    failures = n, next_at = CASE WHEN delay > 0 THEN p_now + delay ELSE 0 END, reset_at = p_now + delay + p_window_ms,
    attempt = p_attempt,
    prev_next_at  = CASE WHEN live THEN pair.next_at END,
    prev_reset_at = CASE WHEN live THEN pair.reset_at END,
    prev_attempt  = CASE WHEN live THEN pair.attempt END
  WHERE email = p_email AND address = p_address;
END;
$$ LANGUAGE plpgsql;

-- Settles an admitted attempt that is no failure: succeeded (the right password: the pair's failures are forgotten)
-- or abandoned (no verdict: one failure less, and if no attempt of the pair followed it, the pair's delay as it was
-- before it). Either way the attempt no longer counts in the windows it was counted in.
CREATE FUNCTION login_attempt_settle(
  p_email text, p_address text, p_attempt uuid, p_email_window bigint, p_address_window bigint, p_succeeded boolean
) RETURNS void AS $$
#variable_conflict use_column
DECLARE
  pair login_pairs%ROWTYPE;
BEGIN
  SELECT * INTO pair FROM login_pairs WHERE email = p_email AND address = p_address FOR UPDATE;
  IF FOUND THEN
    IF p_succeeded OR pair.failures <= 1 THEN
      DELETE FROM login_pairs WHERE email = p_email AND address = p_address;
    ELSIF pair.attempt = p_attempt AND pair.prev_attempt IS NOT NULL THEN
      UPDATE login_pairs SET
        failures = pair.failures - 1, next_at = pair.prev_next_at, reset_at = pair.prev_reset_at, attempt = pair.prev_attempt,
        prev_next_at = NULL, prev_reset_at = NULL, prev_attempt = NULL
      WHERE email = p_email AND address = p_address;
    ELSE
      -- Attempts followed (theirs is the delay now) or ran alongside: the count is all there is to take back.
      UPDATE login_pairs SET failures = pair.failures - 1 WHERE email = p_email AND address = p_address;
    END IF;
  END IF;
  UPDATE login_failure_windows SET failures = greatest(0, failures - 1)
    WHERE scope = 'address' AND subject = p_address AND reset_at = p_address_window;
  UPDATE login_failure_windows SET failures = greatest(0, failures - 1)
    WHERE scope = 'email' AND subject = p_email AND reset_at = p_email_window;
END;
$$ LANGUAGE plpgsql;
