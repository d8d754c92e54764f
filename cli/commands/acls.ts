import { Command } from 'commander';
import { aplicarAcls, descreverAcl, planejarAcls, type AclPrincipals, type PlanoAcls } from '../../sdk/service';
import { withAdmin } from '../../sdk/wire';
import type { Context } from '../context';
import { EXIT, CliError } from '../exit-codes';
import { note, printJson } from '../output';
import { dirOption, loadCatalog } from './schemas';

interface AclFlags {
  schemas: string;
  colonyPrincipal?: string;
  bridgePrincipal?: string;
  platformPrincipal?: string;
  bridgeGroup?: string;
}

const principalOptions = (c: Command): Command =>
  dirOption(c)
    .option('--colony-principal <template>', "a colony's principal; {colonia} is its code", 'User:colonia-{colonia}')
    .option('--bridge-principal <principal>', "the bridge's principal", 'User:feromonios-bridge')
    .option('--platform-principal <principal>', "the audit API's and the CLI's principal", 'User:feromonios-plataforma')
    .option('--bridge-group <group>', "the bridge's consumer group (BRIDGE_GROUP_ID; default <namespace>-bridge)");

const principalsOf = (f: AclFlags): AclPrincipals => ({
  colonia: f.colonyPrincipal,
  bridge: f.bridgePrincipal,
  plataforma: f.platformPrincipal,
  grupoBridge: f.bridgeGroup,
});

/**
 * `acls diff|apply` (docs/security.md): the Kafka ACLs the catalog calls for — each colony writes
 * only the types it publishes, reads only those it consumes under its own group — against the
 * cluster's. `diff` changes nothing and exits 7 when they differ (a CI or cron gate); `apply`
 * makes them equal, idempotently. ACLs of principals it does not manage are listed, never changed.
 */
export function aclsCommand(ctx: () => Context): Command {
  const acls = new Command('acls').description('per-colony Kafka ACLs generated from the catalog');

  principalOptions(
    acls.command('diff').description('what `acls apply` would add and remove (exit 7 when the cluster differs)'),
  ).action(async (f: AclFlags) => {
    const c = ctx();
    const plano = await against(c, f, planejarAcls);
    print(c, plano, 'would');
    if (plano.adicionar.length + plano.remover.length > 0)
      throw new CliError(
        `the cluster's ACLs differ from the catalog: ${plano.adicionar.length} to add, ${plano.remover.length} to remove (run acls apply)`,
        EXIT.CHECK_FAILED,
      );
  });

  principalOptions(
    acls.command('apply').description('create the missing ACLs and delete the managed ones no longer wanted'),
  ).action(async (f: AclFlags) => {
    const c = ctx();
    print(c, await against(c, f, aplicarAcls), 'did');
  });

  return acls;
}

/** Runs `plan` (diff or apply) with the catalog, loaded before any connection, and an admin client. */
function against(c: Context, f: AclFlags, plan: typeof planejarAcls): Promise<PlanoAcls> {
  const catalog = loadCatalog(f.schemas);
  return withAdmin(c.kafka(), (admin) => plan(admin, catalog, c.topics(), principalsOf(f)));
}

function print(c: Context, p: PlanoAcls, mode: 'would' | 'did'): void {
  if (c.out.json)
    return printJson(c.out, {
      adicionar: p.adicionar,
      remover: p.remover,
      iguais: p.iguais,
      alheias: p.alheias,
      aplicado: mode === 'did',
    });
  for (const a of p.adicionar) c.out.out.write(`+ ${descreverAcl(a)}\n`);
  for (const a of p.remover) c.out.out.write(`- ${descreverAcl(a)}\n`);
  for (const a of p.alheias) c.out.out.write(`? ${descreverAcl(a)}  (not managed: left alone)\n`);
  const changes = p.adicionar.length + p.remover.length;
  note(
    c.out,
    changes === 0
      ? `ACLs as the catalog wants: ${p.iguais} bindings, nothing to change`
      : `${mode === 'did' ? 'added' : 'to add'} ${p.adicionar.length}, ${mode === 'did' ? 'removed' : 'to remove'} ${p.remover.length}, unchanged ${p.iguais}`,
  );
}
