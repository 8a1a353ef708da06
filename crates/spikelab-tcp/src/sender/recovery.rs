//! Entering fast recovery (Reno, NewReno, RFC 6675 SACK).

use super::*;

impl TcpSender {
    pub(super) fn enter_recovery(&mut self, now: SimTime) {
        self.start_episode(now, EpisodeKind::FastRetransmit);
        if let Some(f) = &mut self.frto {
            f.on_fast_retransmit(self.snd_max);
        }
        let flight = (self.snd_max - self.snd_una).saturating_sub(self.limited_sent);
        let basis = self.ssthresh_basis(flight);
        let w = self.window();
        self.ssthresh = self.cc.ssthresh(&w, basis);
        self.stats.fast_retx_count += 1;
        self.pending = Some((self.snd_una, TxKind::FastRetransmit));
        self.partial_acks = 0;
        if self.cfg.variant != Variant::Reno {
            self.recover = Some(self.snd_max);
        }
        match self.cfg.variant {
            Variant::Reno | Variant::NewReno => {
                self.cwnd = self.ssthresh + self.cfg.dupthresh as u64 * self.mss;
            }
            Variant::Sack => {
                self.cwnd = self.ssthresh;
                let end = self.snd_una + self.seg_len(self.snd_una);
                self.high_rxt = end;
                self.rescue_rxt = Some(end);
            }
        }
        self.set_ca_state(now, CaState::Recovery);
    }
}
