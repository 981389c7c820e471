/** TRUST_PROXY's parser lives with the configuration, which checks it at start-up (trustProxyProblem). */
export { parseTrustProxy, type TrustProxy } from '@dam/config';
