import { render } from 'preact';
import './styles.css';
import { App } from './app';
import { loadConfig } from './config';

const root = document.getElementById('app');
if (root) {
  loadConfig()
    .then((config) => render(<App config={config} />, root))
    .catch((err: unknown) => {
      root.textContent = `The console cannot start: ${err instanceof Error ? err.message : String(err)}`;
    });
}
