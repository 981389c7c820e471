import { useState } from 'preact/hooks';
import type { Selection } from '../lib/basket';
import { runEach } from '../lib/selection';
import { Link } from '../router';
import { api, can, errorText, type Session } from '../session';
import { ConfirmButton } from './confirm-button';
import { AddToCollectionForm, AddonForm, LinksForm, ProcessForm } from './bulk-forms';

/** A long action under way: what it does and how far it is. */
export interface Progress {
  label: string;
  done: number;
  total: number;
}

/** What an action on the selection ended with: a summary, the jobs it opened, and each asset that failed and why. */
export interface Outcome {
  text: string;
  /** The action as a whole was refused (the reason is `text`). */
  error?: boolean;
  jobIds?: number[];
  failures: Failure[];
}

export interface Failure {
  id: string;
  name: string;
  reason: string;
}

export interface Runner {
  busy: boolean;
  /** Runs `task` for each id with progress; the ids that failed are listed with the API's message. */
  each<R>(label: string, ids: readonly string[], task: (id: string) => Promise<R>): Promise<{ done: { id: string; value: R }[]; failures: Failure[] }>;
  report(o: Outcome): void;
  progress(p: Progress | undefined): void;
  fail(err: unknown): void;
  nameOf(id: string): string;
}

/** The error body of a failed call, thrown (so `runEach` lists it with the asset). */
export class ApiFailure extends Error {
  constructor(readonly body: unknown) {
    super(errorText(body));
  }
}

type Panel = 'collection' | 'process' | 'addon' | 'links' | undefined;

/**
 * The bar over the grid while assets are selected: how many (and that SELECTED_ASSETS holds them), and the actions
 * on all of them: delete (to the trash), add to a collection, process, run an addon, get links. An action on many
 * assets shows its progress, then what it did and each asset it could not do, in the contract's words.
 */
export function SelectionBar({ session, selection, onChanged }: { session: Session; selection: Selection; onChanged: () => void }) {
  const [panel, setPanel] = useState<Panel>();
  const [progress, setProgress] = useState<Progress>();
  const [outcome, setOutcome] = useState<Outcome>();
  const ids = selection.ids;
  const n = ids.length;

  const nameOf = (id: string) => selection.known.get(id)?.name ?? id;
  const runner: Runner = {
    busy: progress !== undefined,
    async each(label, list, task) {
      setOutcome(undefined);
      setProgress({ label, done: 0, total: list.length });
      try {
        const results = await runEach(list, task, (done) => setProgress({ label, done, total: list.length }));
        const failures = results.flatMap((r, i) => (r.ok ? [] : [{ id: list[i] as string, name: nameOf(list[i] as string), reason: errorText(r.error) }]));
        const done = results.flatMap((r, i) => (r.ok ? [{ id: list[i] as string, value: r.value }] : []));
        return { done, failures };
      } finally {
        setProgress(undefined);
      }
    },
    report: (o) => setOutcome(o),
    progress: (p) => {
      if (p && p.done === 0) setOutcome(undefined);
      setProgress(p);
    },
    fail: (err) => setOutcome({ text: errorText(err), error: true, failures: [] }),
    nameOf,
  };

  const mayDelete = can(session, 'DELETE_ASSET') || can(session, 'DELETE_OWN_ASSET');
  const remove = async () => {
    const { done, failures } = await runner.each(`Moving ${n} asset${n === 1 ? '' : 's'} to the trash`, ids, async (id) => {
      const { data, error } = await api(session).POST('/api/v1/assets/{asset_id}/delete', { params: { path: { asset_id: id } }, body: { keys: ['original'] } });
      if (!data) throw new ApiFailure(error);
      return data;
    });
    // Deleted assets leave the selection (the basket would count them against its 300 while they are in the trash).
    selection.check(
      done.map((d) => d.id),
      false,
    );
    setOutcome({ text: `${done.length} of ${n} moved to the trash.`, failures });
    onChanged();
  };

  if (n === 0 && !outcome && !progress && !selection.error) {
    return (
      <p class="muted selection-hint" data-selection-count="0">
        Select assets with their checkboxes (Shift selects a range) to act on several at once.
      </p>
    );
  }

  const toggle = (p: Panel) => setPanel((cur) => (cur === p ? undefined : p));
  return (
    <section class="selection-bar panel" aria-label="Selection" data-selection-count={n}>
      <div class="row">
        <p class="selection-count" aria-live="polite">
          <strong>{n} selected</strong>{' '}
          <span class="muted">{selection.synced ? `(kept in SELECTED_ASSETS${selection.saving ? ', saving…' : ''}; at most 300)` : '(in this tab)'}</span>
        </p>
        {n > 0 && (
          <>
            {can(session, 'MANAGE_COLLECTIONS') && (
              <button type="button" class="secondary" aria-expanded={panel === 'collection'} disabled={runner.busy} onClick={() => toggle('collection')}>
                Add to collection
              </button>
            )}
            {can(session, 'RUN_JOBS') && (
              <>
                <button type="button" class="secondary" aria-expanded={panel === 'process'} disabled={runner.busy} onClick={() => toggle('process')}>
                  Process
                </button>
                <button type="button" class="secondary" aria-expanded={panel === 'addon'} disabled={runner.busy} onClick={() => toggle('addon')}>
                  Run an addon
                </button>
              </>
            )}
            <button type="button" class="secondary" aria-expanded={panel === 'links'} disabled={runner.busy} onClick={() => toggle('links')}>
              Get links
            </button>
            {mayDelete && (
              <ConfirmButton
                label="Delete"
                question={`Move ${n} selected asset${n === 1 ? '' : 's'} to the trash?`}
                confirm="Yes, delete"
                disabled={runner.busy}
                onConfirm={remove}
                onError={runner.fail}
              />
            )}
            <button type="button" class="secondary" disabled={runner.busy} onClick={() => selection.clear()}>
              Clear selection
            </button>
          </>
        )}
      </div>
      {selection.error && (
        <p class="notice error" role="alert">
          {selection.error}{' '}
          <button type="button" class="secondary" onClick={() => selection.dismissError()}>
            Dismiss
          </button>
        </p>
      )}
      {n > 0 && panel === 'collection' && <AddToCollectionForm session={session} ids={ids} runner={runner} />}
      {n > 0 && panel === 'process' && <ProcessForm session={session} selection={selection} runner={runner} />}
      {n > 0 && panel === 'addon' && <AddonForm session={session} selection={selection} runner={runner} />}
      {n > 0 && panel === 'links' && <LinksForm session={session} selection={selection} runner={runner} />}
      {progress && (
        <p class="progress-line" role="status">
          <progress max={progress.total} value={progress.done} aria-label={progress.label} /> {progress.label}: {progress.done} of {progress.total}
        </p>
      )}
      {outcome && (
        <div class={outcome.failures.length || outcome.error ? 'notice error' : 'notice ok'} role="status" data-outcome>
          {outcome.text && <p>{outcome.text}</p>}
          {outcome.jobIds && outcome.jobIds.length > 0 && (
            <p>
              {outcome.jobIds.length} job{outcome.jobIds.length === 1 ? '' : 's'} queued: {outcome.jobIds.join(', ')}. <Link href="/jobs">See jobs</Link>
            </p>
          )}
          {outcome.failures.length > 0 && (
            <>
              <p>
                {outcome.failures.length} asset{outcome.failures.length === 1 ? '' : 's'} could not be done:
              </p>
              <ul class="failures">
                {outcome.failures.map((f) => (
                  <li key={f.id} data-failed-id={f.id}>
                    <strong>{f.name}</strong>: {f.reason}
                  </li>
                ))}
              </ul>
            </>
          )}
        </div>
      )}
    </section>
  );
}
