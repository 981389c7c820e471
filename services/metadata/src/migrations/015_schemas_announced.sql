-- Schemas saved before schemas were announced on `dam.schemas.<group>.<id>` (the search read model indexes
-- their searchable fields): announce each once, through the outbox, as the code does on create and update.
INSERT INTO outbox (id, subject, payload)
SELECT 'schema-' || group_id || '-' || id || '-' || floor(extract(epoch FROM updated_at) * 1000)::bigint,
       'dam.schemas.' || group_id || '.' || id,
       jsonb_build_object(
         'id', 'schema-' || group_id || '-' || id || '-' || floor(extract(epoch FROM updated_at) * 1000)::bigint,
         'group_id', group_id,
         'schema_id', id,
         'service_properties', service_properties,
         'updated_at', to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
FROM asset_schemas
ORDER BY id
ON CONFLICT (id) DO NOTHING;
