"""PPO on rankings: the farm scorer trained under the adapters' sync interval (issue 60, point 4).

At a sync the action is a Plackett-Luce ranking of the ``top_k`` candidates (:mod:`synced`).

* **Rollouts** (:func:`collect`): each training scenario runs ``group_size`` times with sampled
  rankings (one row of uniforms a sync). A sync's return is minus the weighted tardiness of the
  counted jobs whose last chunk starts at or after it; its advantage, that return less the
  group's leave-one-out baseline (``ppo.rollout.leave_one_out``: the others' return from their
  first sync at or after its time; the syncs share the grid). Syncs ranking one job are left out.
* **Log-probability** (:func:`ranking_logp`): the sum over positions of the log-softmax of the
  placed candidate's logit over those not placed yet, from the stored rows; equal to the compiled
  one (``synced.rank``) up to float rounding.
* **Update** (:func:`update`): ``ppo_update``'s clipped surrogate on the ranking's probability
  ratio, the entropy bonus on the first place's softmax, Adam, gradient clipping, ``target_kl``.
"""

import numpy as np
import torch

from sched.learn.farm import scorer, synced
from sched.learn.ppo.rollout import leave_one_out
from sched.learn.ppo.update import UpdateStats, clipped_policy_loss


def ranking_logp(net, x, ctx, count, perm):
    """(log-probability of each ranking ``perm`` (N, K) of the ``count`` (N,) candidates whose rows
    are ``x`` (N, K, n_task), context ``ctx``; entropy of the first place)."""
    K = x.shape[1]
    mask = torch.arange(K)[None, :] < count[:, None]
    logits, _ = net.forward_compact(x, ctx, mask)  # -1e9 where masked
    ordered = logits.gather(1, perm)
    ordered = torch.where(mask, ordered, torch.full_like(ordered, -1e9))
    suffix = torch.logcumsumexp(ordered.flip(1), 1).flip(1)  # logsumexp over the places i..K-1
    logp = torch.where(mask, ordered - suffix, torch.zeros_like(ordered)).sum(1)
    first = torch.log_softmax(logits, 1)
    return logp, -(first.exp() * first).sum(1)


def collect(knet, groups, machines, group_size, urng, sync_s):
    """Run each farm of ``groups`` ``group_size`` times ranking every ``sync_s`` seconds: (the
    syncs ranking >= 2 jobs as tensors (x, ctx, count, perm, logp), their advantages, the runs'
    mean total weighted tardiness)."""
    K = max(knet.top_k, 1)
    xs, cs, ns, ps, lps, advs, totals = [], [], [], [], [], [], []
    for farm in groups:
        D = synced.max_syncs(len(farm.arrays[0]), scorer.chunk_count(farm))
        runs = [scorer.sampled_synced(knet, farm, machines, sync_s, urng.random((D, K)))
                for _ in range(group_size)]  # fmt: skip
        T = max(len(r[0].time) for r in runs)
        times, returns = np.full((T, group_size), np.nan), np.zeros((T, group_size))
        for g, (rec, late, last_start, job_end) in enumerate(runs):
            order = np.argsort(last_start)
            tail = np.concatenate([np.cumsum(late[order][::-1])[::-1], [0.0]])  # late from a start on
            d = len(rec.time)
            times[:d, g] = rec.time
            returns[:d, g] = -tail[np.searchsorted(last_start[order], rec.time, side="left")]
            totals.append(scorer.cost(farm, job_end))
        base = leave_one_out(times, returns, group_size)
        for g, (rec, *_rest) in enumerate(runs):
            keep = rec.count >= 2
            d = len(rec.time)
            xs.append(rec.X[keep]), cs.append(rec.ctx[keep]), ns.append(rec.count[keep])
            ps.append(rec.perm[keep]), lps.append(rec.logp[keep])
            advs.append((returns[:d, g] - base[:d, g])[keep])
    cat = np.concatenate
    batch = tuple(torch.from_numpy(cat(a)) for a in (xs, cs, ns, ps))
    logp = torch.from_numpy(cat(lps).astype(np.float32))
    return (*batch, logp), cat(advs).astype(np.float32), float(np.mean(totals))


def update(net, optimizer, batch, advantages, ppo, gen):
    """``update_epochs`` passes of shuffled minibatches over the syncs of ``batch`` (:func:`collect`);
    returns ``UpdateStats`` (the critic's fields NaN: it takes no part)."""
    x, ctx, count, perm, old = batch
    adv_all = torch.from_numpy(advantages)
    n = int(count.shape[0])
    size = max(1, n // ppo.num_minibatches)
    clipfracs, approx_kl = [], torch.tensor(0.0)
    for _epoch in range(ppo.update_epochs):
        order = torch.randperm(n, generator=gen)
        for lo in range(0, n - size + 1, size):
            mb = order[lo : lo + size]
            logp, entropy = ranking_logp(net, x[mb], ctx[mb], count[mb], perm[mb])
            logratio = logp - old[mb]
            ratio = logratio.exp()
            with torch.no_grad():
                approx_kl = ((ratio - 1) - logratio).mean()
                clipfracs.append(((ratio - 1.0).abs() > ppo.clip_coef).float().mean().item())
            adv = adv_all[mb]
            if ppo.norm_adv:
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            pg_loss = clipped_policy_loss(adv, ratio, ppo.clip_coef)
            entropy_loss = entropy.mean()
            optimizer.zero_grad()
            (pg_loss - ppo.ent_coef * entropy_loss).backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), ppo.max_grad_norm)
            optimizer.step()
        if ppo.target_kl is not None and approx_kl > ppo.target_kl:
            break
    nan = float("nan")
    return UpdateStats(pg_loss.item(), nan, entropy_loss.item(), float(approx_kl), float(np.mean(clipfracs)),
                       nan, nan, nan)  # fmt: skip
