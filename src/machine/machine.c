/* What the machine is made of, from hwloc: packages, cores, logical CPUs,
 * caches, NUMA nodes and the accelerators hwloc's I/O discovery sees; the
 * CPU model, ISA flags and host name from ntp_env so that a machine's key
 * matches the environment of its runs. */
#include <hwloc.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/ctx-impl.h"
#include "measure/machine-impl.h"

void ntp__machine_key(const char *cpu_model, int cpus, const char *hostname, char *buf, size_t len)
{
    snprintf(buf, len, "%s|%d|%s", cpu_model ? cpu_model : "unknown", cpus,
             hostname ? hostname : "unknown");
}

bool ntp__machine_other_cpu(const char *sig, const char *flags, char *why, size_t len)
{
    ntp_env env;
    ntp_env_collect(&env);
    bool other = (sig[0] && strcmp(sig, env.cpu_signature) != 0) ||
                 (flags[0] && strcmp(flags, env.cpu_flags) != 0);
    if (other)
        snprintf(why, len, "(%s; %s) than this one (%s; %s)",
                 sig[0] ? sig : "signature not recorded", flags[0] ? flags : "ISA not recorded",
                 env.cpu_signature, env.cpu_flags);
    return other;
}

void ntp_machine_key(char *buf, size_t len)
{
    ntp_env env;
    ntp_env_collect(&env);
    ntp__machine_key(env.cpu_model, env.cores, env.hostname, buf, len);
}

static const char *cache_type(hwloc_obj_cache_type_t t)
{
    switch (t) {
    case HWLOC_OBJ_CACHE_DATA: return "data";
    case HWLOC_OBJ_CACHE_INSTRUCTION: return "instruction";
    case HWLOC_OBJ_CACHE_UNIFIED: return "unified";
    }
    return "unified";
}

static void describe_caches(hwloc_topology_t t, ntp_machine_info *m)
{
    /* Data and unified caches first (they bound the triad's levels), then
     * instruction caches. */
    static const hwloc_obj_type_t types[] = {
        HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE,  HWLOC_OBJ_L3CACHE,  HWLOC_OBJ_L4CACHE,
        HWLOC_OBJ_L5CACHE, HWLOC_OBJ_L1ICACHE, HWLOC_OBJ_L2ICACHE, HWLOC_OBJ_L3ICACHE,
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        int n = hwloc_get_nbobjs_by_type(t, types[i]);
        if (n <= 0 || m->n_caches >= NTP_MACHINE_MAX_CACHES)
            continue;
        hwloc_obj_t o = hwloc_get_obj_by_type(t, types[i], 0);
        if (!o || !o->attr || o->attr->cache.size == 0)
            continue;
        ntp_cache_info *c = &m->caches[m->n_caches++];
        c->level = (int)o->attr->cache.depth;
        snprintf(c->type, sizeof c->type, "%s", cache_type(o->attr->cache.type));
        c->size_bytes = (int64_t)o->attr->cache.size;
        c->line_bytes = (int)o->attr->cache.linesize;
        c->count = n;
        int w = o->cpuset ? hwloc_bitmap_weight(o->cpuset) : 1;
        c->shared_by = w > 0 ? w : 1;
    }
}

static void describe_gpus(hwloc_topology_t t, ntp_machine_info *m)
{
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_osdev(t, o)) != NULL;) {
        if (!o->attr || (o->attr->osdev.type != HWLOC_OBJ_OSDEV_GPU &&
                         o->attr->osdev.type != HWLOC_OBJ_OSDEV_COPROC))
            continue;
        if (m->n_gpus >= NTP_MACHINE_MAX_GPUS)
            break;
        const char *model = hwloc_obj_get_info_by_name(o, "GPUModel");
        if (!model)
            model = hwloc_obj_get_info_by_name(o, "CoProcType");
        /* The PCI parent names the device when the OS device has no model
         * (a DRM card without a vendor plugin). */
        if (!model && o->parent && o->parent->type == HWLOC_OBJ_PCI_DEVICE)
            model = hwloc_obj_get_info_by_name(o->parent, "PCIDevice");
        snprintf(m->gpus[m->n_gpus++], sizeof m->gpus[0], "%s%s%s", o->name ? o->name : "gpu",
                 model ? ": " : "", model ? model : "");
    }
}

ntp_status ntp_machine_describe(ntp_ctx *ctx, ntp_machine_info *m)
{
    memset(m, 0, sizeof *m);
    ntp_env env;
    ntp_env_collect(&env);
    snprintf(m->cpu_model, sizeof m->cpu_model, "%s", env.cpu_model);
    snprintf(m->cpu_flags, sizeof m->cpu_flags, "%s", env.cpu_flags);
    snprintf(m->cpu_signature, sizeof m->cpu_signature, "%s", env.cpu_signature);
    snprintf(m->hostname, sizeof m->hostname, "%s", env.hostname);
    ntp__machine_key(env.cpu_model, env.cores, env.hostname, m->key, sizeof m->key);
    m->memory_bytes = env.memory_bytes;

    unsigned v = hwloc_get_api_version();
    snprintf(m->source, sizeof m->source, "hwloc %u.%u.%u", v >> 16, (v >> 8) & 0xff, v & 0xff);
    hwloc_topology_t t;
    if (hwloc_topology_init(&t) != 0)
        return ntp__error(ctx, NTP_STATUS_OUT_OF_MEMORY, "hwloc: cannot create a topology");
    /* GPUs and co-processors only: the rest of the PCI tree is noise here. */
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(t) != 0) {
        hwloc_topology_destroy(t);
        return ntp__error(ctx, NTP_STATUS_IO_ERROR, "hwloc: cannot read this machine's topology");
    }
    m->packages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
    m->cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
    m->pus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
    int numa = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
    m->numa_nodes = numa > 0 ? numa : 1;
    for (int i = 0; i < numa && i < NTP_MACHINE_MAX_NUMA; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, (unsigned)i);
        m->numa_memory_bytes[i] = o && o->attr ? (int64_t)o->attr->numanode.local_memory : 0;
    }
    /* Memory is the kernel's MemTotal (as in ntp_env), not the NUMA
     * nodes' sum: virtual machines may hot-plug memory no node lists. */
    describe_caches(t, m);
    describe_gpus(t, m);
    hwloc_topology_destroy(t);
    /* A container may hide the package or core level; count what runs. */
    if (m->pus <= 0)
        m->pus = env.cores;
    if (m->cores <= 0)
        m->cores = m->pus;
    if (m->packages <= 0)
        m->packages = 1;
    return NTP_STATUS_OK;
}
