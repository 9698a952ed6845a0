/* Events by libpfm4 name ("perf::PAGE-FAULTS", "INST_RETIRED:ANY_P",
 * "amd64_fam19h_zen3::RETIRED_INSTRUCTIONS"), encoded for perf_event_open.
 *
 * libpfm4 knows every PMU's event table and detects the CPU from CPUID, so
 * it encodes hardware events even where the kernel exposes no PMU (a VM);
 * opening them then fails, and the event is reported n/a with that reason.
 * The build uses pfm-none.c instead when libpfm4 is absent. */
#include <linux/perf_event.h>
#include <perfmon/pfmlib_perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "counters-impl.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_ret = PFM_ERR_NOINIT;

static void init(void)
{
    init_ret = pfm_initialize();
}

ntp_status ntp__pfm_encode(const char *name, struct perf_event_attr *attr, char *reason, size_t len)
{
    pthread_once(&once, init);
    if (init_ret != PFM_SUCCESS) {
        snprintf(reason, len, "libpfm4 did not initialise: %s", pfm_strerror(init_ret));
        return NTP_STATUS_UNSUPPORTED;
    }
    memset(attr, 0, sizeof *attr);
    pfm_perf_encode_arg_t arg;
    memset(&arg, 0, sizeof arg);
    arg.attr = attr;
    arg.size = sizeof arg;
    /* User and kernel level; the opener drops the kernel when
     * perf_event_paranoid forbids it. */
    int ret = pfm_get_os_event_encoding(name, PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
    attr->size = sizeof *attr;
    if (ret != PFM_SUCCESS) {
        snprintf(reason, len, "libpfm4: %s", pfm_strerror(ret));
        return ret == PFM_ERR_NOTFOUND || ret == PFM_ERR_ATTR || ret == PFM_ERR_UMASK ||
                       ret == PFM_ERR_ATTR_VAL || ret == PFM_ERR_INVAL
                   ? NTP_STATUS_UNKNOWN_NAME
                   : NTP_STATUS_UNSUPPORTED;
    }
    return NTP_STATUS_OK;
}

bool ntp__pfm_describe(char *buf, size_t len)
{
    pthread_once(&once, init);
    if (init_ret != PFM_SUCCESS) {
        snprintf(buf, len, "libpfm4 did not initialise: %s", pfm_strerror(init_ret));
        return false;
    }
    int v = pfm_get_version();
    size_t used = (size_t)snprintf(
        buf, len, "libpfm4 (API %d.%d); PMUs it detects:", PFM_MAJ_VERSION(v), PFM_MIN_VERSION(v));
    pfm_pmu_t i;
    pfm_for_all_pmus(i)
    {
        pfm_pmu_info_t info;
        memset(&info, 0, sizeof info);
        info.size = sizeof info;
        if (pfm_get_pmu_info(i, &info) == PFM_SUCCESS && info.is_present && used < len)
            used += (size_t)snprintf(buf + used, len - used, " %s", info.name);
    }
    return true;
}
