import { Command } from 'commander';
import { retirarColonia } from '../../sdk/service';
import { withAdmin } from '../../sdk/wire';
import type { Context } from '../context';
import { CliError, EXIT } from '../exit-codes';
import { note, printFields, printJson, printTable } from '../output';

/** `topics list|describe|remove-colony` — straight to Kafka (admin client). */
export function topicsCommand(ctx: () => Context): Command {
  const topics = new Command('topics').description("the namespace's Kafka topics");

  topics
    .command('list')
    .description("the namespace's topics: events, DLQs, reprocessing, quarantine")
    .action(async () => {
      const c = ctx();
      const names = c.topics();
      const rows = await withAdmin(c.kafka(), async (admin) => {
        const all = (await admin.listTopics()).filter((t) => t.startsWith(`${names.namespace}.`)).sort();
        if (all.length === 0) return [];
        const meta = await admin.fetchTopicMetadata({ topics: all });
        return meta.topics.map((t) => ({
          topic: t.name,
          kind: kindOf(names, t.name),
          partitions: t.partitions.length,
          replicas: t.partitions[0]?.replicas.length ?? 0,
        }));
      });
      rows.sort((a, b) => a.topic.localeCompare(b.topic));
      if (c.out.json) return printJson(c.out, rows);
      printTable(
        c.out,
        ['TOPIC', 'KIND', 'PARTITIONS', 'REPLICAS'],
        rows.map((r) => [r.topic, r.kind, r.partitions, r.replicas]),
      );
    });

  topics
    .command('describe')
    .description('partitions (leader, replicas, ISR, offsets) and retention of one topic')
    .argument('<topic>', 'topic name')
    .action(async (topic: string) => {
      const c = ctx();
      const d = await withAdmin(c.kafka(), async (admin) => {
        if (!(await admin.listTopics()).includes(topic)) throw new CliError(`no topic ${topic}`, EXIT.NOT_FOUND);
        const [meta, offsets, configs] = await Promise.all([
          admin.fetchTopicMetadata({ topics: [topic] }),
          admin.fetchTopicOffsets(topic),
          admin.describeConfigs({ resources: [{ type: 2, name: topic }], includeSynonyms: false }),
        ]);
        const config = Object.fromEntries(
          (configs.resources[0]?.configEntries ?? [])
            .filter((e) =>
              [
                'retention.ms',
                'retention.bytes',
                'cleanup.policy',
                'min.insync.replicas',
                'max.message.bytes',
              ].includes(e.configName),
            )
            .map((e) => [e.configName, e.configValue]),
        );
        const partitions = (meta.topics[0]?.partitions ?? [])
          .map((p) => {
            const o = offsets.find((x) => x.partition === p.partitionId);
            return {
              partition: p.partitionId,
              leader: p.leader,
              replicas: p.replicas,
              isr: p.isr,
              low: o?.low,
              high: o?.high,
            };
          })
          .sort((a, b) => a.partition - b.partition);
        return { topic, kind: kindOf(c.topics(), topic), config, partitions };
      });
      if (c.out.json) return printJson(c.out, d);
      printFields(c.out, [['topic', d.topic], ['kind', d.kind], ...Object.entries(d.config)]);
      c.out.out.write('\n');
      printTable(
        c.out,
        ['PARTITION', 'LEADER', 'REPLICAS', 'ISR', 'LOW', 'HIGH'],
        d.partitions.map((p) => [p.partition, p.leader, p.replicas.join(','), p.isr.join(','), p.low, p.high]),
      );
    });

  topics
    .command('remove-colony')
    .description("delete a retired colony's DLQ and reprocessing topics and its consumer group (refused while it runs)")
    .argument('<colonia>', 'colony code')
    .option('--yes', 'confirm: the DLQ topic holds the only full copies of its failed events')
    .action(async (colonia: string, f: { yes?: boolean }) => {
      const c = ctx();
      if (!f.yes)
        throw new CliError(
          `refusing to delete the topics and group of colony ${colonia} without --yes (the DLQ topic holds the only full payloads of its failures)`,
          EXIT.NEEDS_CONFIRMATION,
        );
      const r = await withAdmin(c.kafka(), (admin) => retirarColonia(admin, c.topics(), colonia));
      if (c.out.json) return printJson(c.out, r);
      for (const t of r.topicosRemovidos) c.out.out.write(`deleted topic ${t}\n`);
      if (r.grupoRemovido) c.out.out.write(`deleted group ${r.grupoRemovido}\n`);
      note(
        c.out,
        r.topicosRemovidos.length || r.grupoRemovido
          ? `colony ${colonia} removed from Kafka`
          : `nothing left for colony ${colonia}`,
      );
    });

  return topics;
}

function kindOf(names: ReturnType<Context['topics']>, topic: string): string {
  if (names.tipoDe(topic) !== undefined) return 'evento';
  if (names.coloniaDaDlq(topic) !== undefined) return 'dlq';
  if (topic === names.quarentena()) return 'quarentena';
  if (topic.startsWith(`${names.namespace}.reprocessar.`)) return 'reprocessar';
  return 'other';
}
