/** Each service's own configuration loader, by name: what the manifests' environment must satisfy (deploy/test). */
import type { ServiceName } from '../k8s/services';
import { loadAddonConfig } from '../../services/addon/src/config';
import { loadAuthConfig } from '../../services/auth/src/config';
import { loadConversionConfig } from '../../services/conversion/src/config';
import { loadGatewayConfig } from '../../services/gateway/src/config';
import { loadLinkSigningConfig } from '../../services/link-signing/src/config';
import { loadMetadataConfig } from '../../services/metadata/src/config';
import { loadSearchConfig } from '../../services/search/src/config';
import { loadTranscodeConfig } from '../../services/transcode/src/config';
import { loadUploadConfig } from '../../services/upload/src/config';
import { loadWebhookConfig } from '../../services/webhook/src/config';

export const CONFIG_LOADERS: Record<ServiceName, (env: NodeJS.ProcessEnv) => unknown> = {
  gateway: loadGatewayConfig,
  upload: loadUploadConfig,
  'link-signing': loadLinkSigningConfig,
  auth: loadAuthConfig,
  metadata: loadMetadataConfig,
  search: loadSearchConfig,
  conversion: loadConversionConfig,
  transcode: loadTranscodeConfig,
  addon: loadAddonConfig,
  webhook: loadWebhookConfig,
};
