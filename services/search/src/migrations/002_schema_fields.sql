-- Searchable schema fields (CONTRACT §5, §8): each asset's schema comes with its events (`data_schema_id`), each
-- schema's `service_properties` from the DATA_SCHEMAS stream. A keyword matches, beside the name (weight A),
-- `service_search_txt` and the values of the schema's searchable and keyword paths (weight B).
ALTER TABLE search_index ADD COLUMN data_schema_id integer NOT NULL DEFAULT 0;
CREATE INDEX search_index_schema_idx ON search_index (group_id, data_schema_id) WHERE data_schema_id <> 0;

CREATE TABLE search_schemas (
  group_id           integer NOT NULL,
  schema_id          integer NOT NULL,
  service_properties jsonb NOT NULL,
  updated_at         timestamptz NOT NULL,
  PRIMARY KEY (group_id, schema_id)
);

-- The text of an asset's data that keyword search matches: `service_search_txt` (every schema), then the value
-- of each searchable or keyword path of the schema (`a.b` or `/a/b`; arrays and objects as their JSON text).
CREATE FUNCTION search_text(data jsonb, props jsonb) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT concat_ws(' ',
    CASE WHEN jsonb_typeof(data -> 'service_search_txt') = 'string' THEN data ->> 'service_search_txt' END,
    (SELECT string_agg(v.value, ' ' ORDER BY p.path)
       FROM jsonb_each(coalesce(props, '{}'::jsonb)) AS p(path, opts)
       CROSS JOIN LATERAL (SELECT data #>> regexp_split_to_array(trim(leading '/' FROM p.path), '[./]') AS value) AS v
      WHERE p.path <> 'service_search_txt' AND jsonb_typeof(p.opts) = 'object'
        AND (p.opts -> 'searchable' = 'true'::jsonb OR p.opts -> 'keyword' = 'true'::jsonb)
        AND v.value IS NOT NULL))
$$;
