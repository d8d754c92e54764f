import { SchemaRegistry as ConfluentClient, SchemaType } from '@kafkajs/confluent-schema-registry';
import { createAjv } from '../../sdk/wire';

/** The community registry client, given our draft 2020-12 Ajv (its default is draft-07). */
export const Ajv2020SchemaType = new ConfluentClient(
  { host: process.env.SCHEMA_REGISTRY_URL ?? 'http://127.0.0.1:8081/apis/ccompat/v7' },
  { [SchemaType.JSON]: { ajvInstance: createAjv() as never } },
);
