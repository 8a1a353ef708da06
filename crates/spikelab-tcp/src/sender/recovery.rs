//! Entering fast recovery (Reno, NewReno, RFC 6675 SACK).

use super::*;

impl TcpSender {
    pub(super) fn enter_recovery(&mut self, now: SimTime) {
        self.start_episode(now, EpisodeKind::FastRetransmit);
        self.loss_high = None;
        if let Some(f) = &mut self.frto {
            f.on_fast_retransmit(self.snd_max);
        }
        let flight = (self.snd_max - self.snd_una).saturating_sub(self.limited_sent);
        let basis = self.ssthresh_basis(flight);
        let w = self.window();
        let prior_cwnd = self.cwnd;
        // From CWR the window is already being reduced for this window of data: Linux
        // (`tcp_fastretrans_alert`) sets ssthresh only when the state is below CWR.
        if self.state != CaState::Cwr {
            self.ssthresh = self.cc.ssthresh(&w, basis);
        }
        self.stats.fast_retx_count += 1;
        // With RACK the fast retransmission is the first segment it marked lost.
        let first = match self.cfg.rack {
            true => self.board.first_lost().unwrap_or(self.snd_una),
            false => self.snd_una,
        };
        self.pending = Some((first, TxKind::FastRetransmit));
        // RFC 8985 §7.4 / Linux tcp_init_cwnd_reduction: a recovery ends the probe's episode.
        self.tlp_high_seq = None;
        if matches!(self.early_timer, Some(EarlyTimer::LossProbe(_))) {
            self.early_timer = None;
        }
        self.partial_acks = 0;
        if self.cfg.variant != Variant::Reno {
            self.recover = Some(self.snd_max);
        }
        match self.cfg.variant {
            Variant::Reno | Variant::NewReno => {
                self.cwnd = self.ssthresh + self.cfg.dupthresh as u64 * self.mss;
            }
            Variant::Sack => {
                if self.cfg.prr {
                    self.prr_init(prior_cwnd);
                } else {
                    self.cwnd = self.ssthresh;
                }
                let end = self.snd_una + self.seg_len(self.snd_una);
                self.high_rxt = end;
                self.rescue_rxt = Some(end);
            }
        }
        self.set_ca_state(now, CaState::Recovery);
    }
}
