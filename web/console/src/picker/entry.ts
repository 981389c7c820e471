import '@uppy/core/css/style.min.css';
import '@uppy/dashboard/css/style.min.css';
import './picker.css';
import { loadConfig } from '../config';
import { mountPicker, type PickerHandle, type PickerOptions } from './picker';

/**
 * `{base}/console/picker.js`: the picker on any page, with nothing but an uploadkey. Two ways:
 *
 *   <div id="dam-picker"></div>
 *   <script src="https://dam.example/console/picker.js" data-uploadkey="upk_…" data-target="#dam-picker"></script>
 *
 *   <script src="https://dam.example/console/picker.js"></script>
 *   <script>DamPicker.mount('#dam-picker', { uploadkey: 'upk_…', onUploaded: (a) => console.log(a.id) });</script>
 *
 * `endpoint` ({upload}) defaults to what the DAM's config.json names; picker.css is loaded from next to
 * picker.js. The target element also receives `dam-picker:uploaded` ({id, name, size, type}) and
 * `dam-picker:complete` events, so a page needs no script of its own.
 */
export type MountOptions = Omit<PickerOptions, 'endpoint'> & { endpoint?: string };

const script = document.currentScript instanceof HTMLScriptElement ? document.currentScript : undefined;
const consoleBase = script?.src ? new URL('.', script.src).href.replace(/\/$/, '') : `${window.location.origin}/console`;

function ensureStylesheet(): void {
  if (document.querySelector('link[data-dam-picker]')) return;
  const link = document.createElement('link');
  link.rel = 'stylesheet';
  link.href = `${consoleBase}/picker.css`;
  link.dataset.damPicker = '';
  document.head.appendChild(link);
}

export async function mount(target: HTMLElement | string, options: MountOptions): Promise<PickerHandle> {
  const el = typeof target === 'string' ? document.querySelector<HTMLElement>(target) : target;
  if (!el) throw new Error(`DamPicker.mount: no element ${String(target)}`);
  if (!options.uploadkey && !options.token) throw new Error('DamPicker.mount: an uploadkey is required');
  ensureStylesheet();
  const endpoint = options.endpoint ?? (await loadConfig(consoleBase)).upload;
  el.classList.add('dam-picker');
  return mountPicker(el, {
    ...options,
    endpoint,
    onUploaded(asset) {
      el.dispatchEvent(new CustomEvent('dam-picker:uploaded', { detail: asset, bubbles: true }));
      options.onUploaded?.(asset);
    },
    onComplete(result) {
      el.dispatchEvent(new CustomEvent('dam-picker:complete', { detail: result, bubbles: true }));
      options.onComplete?.(result);
    },
  });
}

// <script data-uploadkey data-target>: mount as soon as the target exists.
const auto = script?.dataset;
if (auto?.uploadkey && auto.target) {
  const start = () => {
    mount(auto.target as string, {
      uploadkey: auto.uploadkey as string,
      ...(auto.endpoint ? { endpoint: auto.endpoint } : {}),
      ...(auto.height ? { height: Number(auto.height) } : {}),
    }).catch((err: unknown) => {
      console.error('DamPicker:', err);
    });
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start, { once: true });
  else start();
}
