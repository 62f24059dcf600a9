"""The warm start and expert iteration: the gated teacher's labels
(``sched.learn.search.teacher``), imitated."""

import torch

from sched.config import seed_range, training_atc_k
from sched.learn.search.teacher import make_labels


def teacher_base(cfg, settings):
    """The warm start teacher's base policy (``train.teacher_base``; ATC with the training's k);
    ``settings``: a ``sched.learn.settings.Training``."""
    from sched.learn.search.planner import rule_base

    return rule_base(settings.teacher.base, training_atc_k(cfg, settings.network.atc_k))


def teacher_labels(cfg, settings, progress=False):
    """The gated teacher's labels on the first ``train.teacher_scenarios`` training seeds."""
    seeds = list(seed_range(cfg, "train"))[: settings.teacher.scenarios]
    labelling, base = settings.teacher.labelling(), teacher_base(cfg, settings)
    labels, _ = make_labels(cfg, seeds, labelling, base, settings.network.top_k, progress=progress)
    return labels


def warm_start(cfg, settings, labels=None):
    """PPO's warm start (``sched.learn.ppo.loop.train``'s ``warm_start``): a callable
    ``(net, gen, progress)`` that distils the gated teacher's ``labels`` into ``net`` and returns
    the loss; the labels are made on the first ``train.teacher_scenarios`` training seeds, when
    it is called, if None."""

    def run(net, gen, progress=False):
        nonlocal labels
        if labels is None:  # after the untrained network's validation, as the loop has it
            labels = teacher_labels(cfg, settings, progress=progress)
        return distill(net, labels, settings.distill, gen, progress=progress)

    return run


#: The label a distillation imitates (``train.distill_target``): the teacher's pessimistic bound
#: (its decision rule, biased towards its base), the mean paired difference (unbiased, noisier),
#: or the improved policy built on the mean paired differences (:func:`improved_policy`).
LABEL_KEYS = {"bound": "label", "mean": "mean", "improved": "mean"}


def distill(net, labels, settings, gen, progress=False):
    """Warm start: cost-sensitive imitation of the rollout teacher.

    ``settings``: a ``sched.learn.settings.DistillSettings``. With ``target`` "bound" or "mean",
    for each labelled decision the loss is the expected label (extra weighted tardiness over the base's
    choice, in units of ``scale``) under the policy's softmax over the
    teacher's candidates: the gradient pushes probability towards the cheaper
    candidates in proportion to what a wrong pick costs, and is zero where the
    student already puts everything on the cheapest. With "improved" the loss
    is the cross-entropy to :func:`improved_policy` of the network's own
    logits before the distillation: a target at every labelled state, which
    holds the student where the teacher agrees with it. The critic is left to
    PPO. ``gen`` shuffles the decisions. Returns the mean loss of the last
    epoch.
    """
    x, ctx = torch.from_numpy(labels["x"]), torch.from_numpy(labels["ctx"])
    lab = torch.from_numpy(labels[LABEL_KEYS[settings.target]])
    K = x.shape[1]
    valid = torch.arange(K).unsqueeze(0) < torch.from_numpy(labels["count"]).unsqueeze(1)
    # what each decision's loss compares the policy with: its regrets, or the improved policy
    target, loss_of = regrets(lab, valid, settings.scale), imitation_loss
    if settings.target == "improved":
        start = start_logits(net, x, ctx, valid, settings.batch)
        target, loss_of = improved_policy(start, valid, target, settings.improve), cross_entropy
    opt = torch.optim.Adam(net.parameters(), lr=settings.lr)
    n = len(x)
    epochs = range(settings.epochs)
    if progress:
        from tqdm import tqdm

        epochs = tqdm(epochs, desc="distil teacher", unit="epoch", dynamic_ncols=True)
    last = float("nan")
    for _ in epochs:
        perm = torch.randperm(n, generator=gen)
        total = 0.0
        for lo in range(0, n, settings.batch):
            idx = perm[lo : lo + settings.batch]
            logits, _ = net.forward_compact(x[idx], ctx[idx], valid[idx])
            loss = loss_of(logits, valid[idx], target[idx])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), settings.max_grad_norm)
            opt.step()
            total += loss.item() * len(idx)
        last = total / n
    return last


def regrets(label, valid, scale):
    """Each candidate's label minus the best valid label of its decision, over ``scale``; 0 where
    not ``valid`` (padding). ``label``, ``valid``: (decisions, candidates)."""
    best = label.masked_fill(~valid, float("inf")).min(1, keepdim=True).values
    return (label - best).masked_fill(~valid, 0.0) / scale


def imitation_loss(logits, valid, regret):
    """The cost-sensitive imitation loss: the mean over decisions of the expected regret under
    the policy's softmax over each decision's valid candidates.

    ``logits``, ``valid``, ``regret``: (decisions, candidates), the candidates in the
    teacher's order (the policy's own: ``forward_compact`` of the stored observation).
    """
    picked = logits.masked_fill(~valid, -1e9)
    return (torch.softmax(picked, 1) * regret).sum(1).mean()


def start_logits(net, x, ctx, valid, batch):
    """The network's logits on the labelled decisions before it learns from them."""
    with torch.no_grad():
        return (
            torch.cat(
                [
                    net.forward_compact(x[lo : lo + batch], ctx[lo : lo + batch], valid[lo : lo + batch])[0]
                    for lo in range(0, len(x), batch)
                ]
            )
            if len(x)
            else torch.zeros(valid.shape)
        )


def improved_policy(logits, valid, regret, c):
    """The improved policy of a decision: softmax(logits - c * regret) over its valid candidates.

    ``regret``: each candidate's mean paired cost against the cheapest, over ``distill_scale``
    (:func:`regrets`); ``c`` (``train.distill_improve``): how far the teacher's evidence moves the
    student's own policy (``logits``, before the distillation). Where the teacher finds no
    difference the target is the student's own policy, as in the policy-improvement operators of
    Gumbel MuZero (Danihelka et al., ICLR 2022: softmax(logits + sigma(completed Q))).
    """
    return torch.softmax((logits - c * regret).masked_fill(~valid, -1e9), 1).masked_fill(~valid, 0.0)


def cross_entropy(logits, valid, target):
    """The mean over decisions of the cross-entropy of the policy's softmax over each decision's
    valid candidates to ``target`` (a distribution over them): its KL to the target, plus a
    constant."""
    logp = torch.log_softmax(logits.masked_fill(~valid, -1e9), 1)
    return -(target * logp).sum(1).mean()
