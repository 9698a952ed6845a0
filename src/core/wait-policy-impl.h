/* The thread pools' wait policy, private to libntprof (src/core/wait-policy.c). */
#ifndef NTPROF_WAIT_POLICY_IMPL_H
#define NTPROF_WAIT_POLICY_IMPL_H

#include <stdbool.h>

/* Whether this process runs its thread pools passively (OMP_WAIT_POLICY
 * passive when the library loaded: --wait-policy passive, or auto beside
 * busy processes): pools without an environment setting of their own
 * (XNNPACK's pthreadpool) then let their workers sleep after each
 * operator too (docs/run.md#wait-policy). */
bool ntp__wait_passive(void);

#endif
